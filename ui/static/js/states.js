// What colour things are: a cluster's health from its SyncTarget, and the state of one object's copy on one
// cluster from the object's PlacementStatus (status/readiness.py decides the phases on the hub).
//
// Copy states: pending (no report yet), applied (applied, not ready or not current), ready, failed (could
// not be applied, or its customized copy could not be made), drifted (ready or applied, but changed in the
// cluster and put back by the syncer), stale (the cluster is down: its syncer sends no heartbeats), leaving (no
// longer a destination, kept until the object's other clusters run it Ready: a make-before-break move).

export const EDGE_STATES = ['pending', 'applied', 'ready', 'failed', 'drifted', 'stale', 'leaving'];

export function health(target) {
  const status = target.status || {};
  const spec = target.spec || {};
  const ready = (status.conditions || []).find((c) => c && c.type === 'Ready');
  const notes = [];
  if (spec.unschedulable) notes.push('cordoned');
  if (spec.evictAfter) notes.push('draining');
  if (!ready) return { state: 'unknown', label: 'Unknown', message: 'no heartbeat from its syncer yet', notes };
  const message = [ready.reason, ready.message].filter(Boolean).join(': ');
  if (ready.status === 'True') return { state: 'ready', label: 'Ready', message, notes };
  return { state: 'down', label: 'Down', message: `${message} (since ${ready.lastTransitionTime || '?'})`, notes };
}

export function statusKey(object) {
  return `${object.group}/${object.resource}/${object.namespace}/${object.name}`;
}

// The state of `cluster`'s copy, given the object's PlacementStatus (or undefined) and the cluster's health.
export function copyState(placementStatus, cluster, clusterHealth) {
  if (clusterHealth && clusterHealth.state === 'down') {
    return { state: 'stale', reason: `cluster ${cluster} is down: ${clusterHealth.message}` };
  }
  const entry = placementStatus ? (placementStatus.clusters || []).find((c) => c.name === cluster) : undefined;
  if (!entry) return { state: 'pending', reason: 'no report from the cluster yet' };
  const reason = entry.message || '';
  switch (entry.phase) {
    case 'Failed': return { state: 'failed', reason, entry };
    case 'Stale': return { state: 'stale', reason: reason || 'the cluster\'s syncer sends no heartbeats', entry };
    case 'Pending': return { state: 'pending', reason: reason || 'no report from the cluster yet', entry };
    case 'Leaving': return { state: 'leaving', entry,
                             reason: `moving away: kept (${entry.ready ? 'Ready' : 'not Ready'}) until the other clusters run it Ready` };
    default: {
      if (entry.driftCorrections) {
        const times = entry.driftCorrections === 1 ? 'once' : `${entry.driftCorrections} times`;
        return { state: 'drifted', reason: `changed in the cluster and put back ${times}${reason ? `; ${reason}` : ''}`, entry };
      }
      return { state: entry.phase === 'Ready' ? 'ready' : 'applied', reason: reason || entry.phase, entry };
    }
  }
}
