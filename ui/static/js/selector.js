// Label selectors in kubectl's syntax (apimachinery's labels.Parse): `key`, `!key`, `key=value`,
// `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key>1`, `key<1`, joined by commas;
// and whether a label map matches one. `!=` and `notin` match objects without the key, as upstream.

export class SelectorError extends Error {}

const KEY = '([A-Za-z0-9](?:[-A-Za-z0-9_./]*[A-Za-z0-9])?)';
const VALUE = '((?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?)';
const FORMS = [
  [new RegExp(`^!\\s*${KEY}$`), (m) => ({ key: m[1], op: 'DoesNotExist', values: [] })],
  [new RegExp(`^${KEY}\\s+(in|notin)\\s*\\((.*)\\)$`), (m) => ({ key: m[1], op: m[2] === 'in' ? 'In' : 'NotIn', values: setValues(m[3]) })],
  [new RegExp(`^${KEY}\\s*(==|=|!=)\\s*${VALUE}$`), (m) => ({ key: m[1], op: m[2] === '!=' ? 'NotIn' : 'In', values: [m[3]] })],
  [new RegExp(`^${KEY}\\s*(>|<)\\s*(-?\\d+)$`), (m) => ({ key: m[1], op: m[2] === '>' ? 'Gt' : 'Lt', values: [m[3]] })],
  [new RegExp(`^${KEY}$`), (m) => ({ key: m[1], op: 'Exists', values: [] })],
];

function setValues(text) {
  const values = text.split(',').map((v) => v.trim());
  for (const value of values) {
    if (!new RegExp(`^${VALUE}$`).test(value)) throw new SelectorError(`invalid label value "${value}"`);
  }
  return values;
}

// Splits at commas outside parentheses.
function terms(text) {
  const out = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')') depth--;
    else if (text[i] === ',' && depth === 0) { out.push(text.slice(start, i)); start = i + 1; }
    if (depth < 0) throw new SelectorError(`unbalanced ")" in "${text}"`);
  }
  if (depth !== 0) throw new SelectorError(`unbalanced "(" in "${text}"`);
  out.push(text.slice(start));
  return out.map((t) => t.trim());
}

export function parseSelector(text) {
  if (!text || !text.trim()) return [];
  return terms(text.trim()).map((term) => {
    if (!term) throw new SelectorError('an empty requirement (two commas in a row, or a trailing comma)');
    for (const [pattern, build] of FORMS) {
      const match = pattern.exec(term);
      if (match) return build(match);
    }
    throw new SelectorError(`unable to parse requirement "${term}"`);
  });
}

export function matches(requirements, labels) {
  const has = (key) => Object.prototype.hasOwnProperty.call(labels, key);
  return requirements.every(({ key, op, values }) => {
    switch (op) {
      case 'Exists': return has(key);
      case 'DoesNotExist': return !has(key);
      case 'In': return has(key) && values.includes(labels[key]);
      case 'NotIn': return !has(key) || !values.includes(labels[key]);
      case 'Gt': return has(key) && /^-?\d+$/.test(labels[key]) && Number(labels[key]) > Number(values[0]);
      case 'Lt': return has(key) && /^-?\d+$/.test(labels[key]) && Number(labels[key]) < Number(values[0]);
      default: return false;
    }
  });
}
