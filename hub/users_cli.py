"""``spacehub user create|revoke|list|rotate-admin-token``: people's access to spaces.

``create`` mints the user's token (``/spacehub/v1``), binds the chosen role in the space and the right to
enter it in its parent space (RBAC objects written through the spaces' API, as ``kubectl create
clusterrolebinding`` would), and prints a kubeconfig for that space with the user's own token.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from typing import Any
from urllib.parse import quote

from apiserver import spacepaths
from kubeclient import kubeconfig
from kubeclient.files import atomic_write
from kubeclient.output import Subparsers, add_output_flag, print_list
from spaces.cli import from_root
from spaces.client import ClientError, HubClient, HubError, client_for

API = "/spacehub/v1"
ROLES = ("view", "edit", "admin")
RBAC = "/apis/rbac.authorization.k8s.io/v1"
ROOT = "root"
USER_LABEL = "spacehub.io/user"
SPACE_LABEL = "spacehub.io/space"  # on the grants, so that they can be found (and removed) by space
_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def register_user_commands(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    user = sub.add_parser("user", parents=[common], help="give people access to spaces, revoke it")
    user_sub = user.add_subparsers(dest="user_command", metavar="COMMAND", required=True)

    create = user_sub.add_parser(
        "create", parents=[common], help="mint a user's token, bind a role in a space, print a kubeconfig",
        description="Mint a token for user NAME, bind ClusterRole ROLE to the user in SPACE (and the right to "
                    "enter SPACE in its parent space), and print a kubeconfig for SPACE with that token.")
    create.add_argument("name", metavar="NAME")
    create.add_argument("--space", required=True, metavar="SPACE",
                        help="the path of the space the user works in (team-a, org:team, root:org:team)")
    create.add_argument("--role", required=True, choices=ROLES, help="the ClusterRole bound in the space")
    create.add_argument("--group", action="append", default=[], metavar="GROUP",
                        help="a group the user is in (repeatable); bindings may name groups")
    create.add_argument("--expires", default=None, metavar="DURATION",
                        help="the token stops working after this long, e.g. 12h or 30d (default: never)")
    create.add_argument("--out", type=str, default=None, metavar="FILE",
                        help="write the kubeconfig to FILE (mode 0600) instead of standard output")
    create.set_defaults(func=_create)

    revoke = user_sub.add_parser("revoke", parents=[common], help="every token of a user stops working now")
    revoke.add_argument("name", metavar="NAME")
    revoke.set_defaults(func=_revoke)

    listing = user_sub.add_parser("list", parents=[common], help="list users and their tokens")
    add_output_flag(listing)
    listing.set_defaults(func=_list)

    rotate = user_sub.add_parser(
        "rotate-admin-token", parents=[common], help="issue a new administrator token; the earlier ones expire",
        description="Mint a new administrator token and write it into the kubeconfig in use (and into the "
                    "admin.token file beside it, if there is one); the earlier administrator tokens keep working "
                    "for --grace seconds.")
    rotate.add_argument("--grace", type=float, default=600.0, metavar="SECONDS",
                        help="how long the earlier administrator tokens keep working (default 600)")
    rotate.set_defaults(func=_rotate_admin)


def parse_duration(text: str) -> float:
    match = _DURATION.match(text.strip())
    if not match or int(match.group(1)) == 0:
        raise ClientError(f'invalid duration "{text}": use a positive number with s, m, h or d, e.g. 12h')
    return float(int(match.group(1)) * _UNITS[match.group(2)])


def _create_or_keep(client: HubClient, path: str, obj: dict[str, Any]) -> None:
    """Create an RBAC object; one of that name is kept (its name says what it grants)."""
    try:
        client.post(path, obj)
    except HubError as exc:
        if exc.code != 409:
            raise


def _binding(name: str, role: str, user: str, space: str) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": {USER_LABEL: _label(user), SPACE_LABEL: _label(space)}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}


def _label(value: str) -> str:
    """A label value naming ``value`` (label values are at most 63 of [A-Za-z0-9._-])."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", value)[:63].strip("._-") or "user"


def _create(args: argparse.Namespace) -> int:
    expires = parse_duration(args.expires) if args.expires else None
    path, cfg = kubeconfig.load_selected(getattr(args, "kubeconfig", None))
    acc = kubeconfig.access(cfg, path.parent)
    base, _ = kubeconfig.split_server(acc.server)
    space = from_root(args.space)
    parent = spacepaths.parent_id(spacepaths.store_id(space))
    if parent is None:
        raise ClientError(f"users are given spaces below {ROOT}; in {ROOT} itself, bind a role with kubectl")
    # Entering a space is a permission on its Space object in its parent (apiserver.access).
    holder = quote(spacepaths.full_path(parent), safe=":")
    name, label = spacepaths.base_name(space), spacepaths.store_id(space)
    with client_for(getattr(args, "kubeconfig", None)) as client:
        client.get(f"/clusters/{holder}/apis/spacehub.io/v1alpha1/spaces/{quote(name, safe='')}")
        access_role = f"spacehub:space:{name}:access"
        _create_or_keep(client, f"/clusters/{holder}{RBAC}/clusterroles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": access_role, "labels": {SPACE_LABEL: _label(label)}},
            "rules": [{"apiGroups": ["spacehub.io"], "resources": ["spaces/content"], "resourceNames": [name],
                       "verbs": ["access"]},
                      {"apiGroups": ["spacehub.io"], "resources": ["spaces"], "resourceNames": [name],
                       "verbs": ["get"]}]})
        _create_or_keep(client, f"/clusters/{holder}{RBAC}/clusterrolebindings",
                        _binding(f"spacehub:user:{args.name}:space:{name}", access_role, args.name, label))
        _create_or_keep(client, f"/clusters/{quote(space, safe=':')}{RBAC}/clusterrolebindings",
                        _binding(f"spacehub:user:{args.name}:{args.role}", args.role, args.name, label))
        body: dict[str, Any] = {"groups": args.group}
        if expires is not None:
            body["expiresSeconds"] = expires
        minted = client.post(f"{API}/users/{quote(args.name, safe='')}/tokens", body)
    config = kubeconfig.build_kubeconfig(kubeconfig.with_space(base, space), acc.ca_pem, minted["token"],
                                         f"{args.name}@{space}",
                                         insecure_skip_tls_verify=acc.insecure_skip_tls_verify)
    text = kubeconfig.dump(config)
    if args.out:
        atomic_write(kubeconfig.Path(args.out), text.encode())
        until = (f", until {dt.datetime.fromtimestamp(minted['expires'], dt.UTC):%Y-%m-%dT%H:%M:%SZ}"
                 if minted.get("expires") else "")
        print(f"user/{args.name} can {args.role} in space {space}{until}; kubeconfig written to {args.out}",
              file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _revoke(args: argparse.Namespace) -> int:
    with client_for(getattr(args, "kubeconfig", None)) as client:
        result = client.post(f"{API}/users/{quote(args.name, safe='')}:revoke", {})
    print(f"user/{args.name} revoked ({result.get('revokedTokens', 0)} tokens)")
    return 0


def _list(args: argparse.Namespace) -> int:
    with client_for(getattr(args, "kubeconfig", None)) as client:
        result = client.get(f"{API}/users")

    def until(item: dict[str, Any]) -> str:
        expires = item.get("expires")
        return "never" if expires is None else f"{dt.datetime.fromtimestamp(expires, dt.UTC):%Y-%m-%dT%H:%M:%SZ}"

    print_list(result, args.output, resource_name="user", header=("NAME", "GROUPS", "TOKENS", "EXPIRES"),
               row=lambda u: (u["name"], ",".join(u.get("groups") or []) or "<none>", str(u.get("activeTokens", 0)),
                              until(u)),
               name=lambda u: u["name"], empty="No users found.")
    return 0


def _rotate_admin(args: argparse.Namespace) -> int:
    if args.grace < 0:
        raise ClientError("--grace must not be negative")
    explicit = getattr(args, "kubeconfig", None)
    config = kubeconfig.load_merged(kubeconfig.kubeconfig_paths(explicit))
    user = kubeconfig.current_user(config.view)
    if not user.get("token"):
        raise ClientError("the current context's user has no token to replace")
    with client_for(explicit) as client:
        token = client.post(f"{API}/admin:rotate-token", {"graceSeconds": args.grace})["token"]
    user["token"] = token
    written = config.save()
    for path in written:
        beside = path.parent / kubeconfig.ADMIN_TOKEN_FILE
        if beside.exists():
            atomic_write(beside, (token + "\n").encode("ascii"))
    print(f"administrator token rotated; the earlier ones stop in {args.grace:g}s; written to "
          f"{', '.join(str(p) for p in written) or 'no file'}")
    return 0
