// A careful parser for the subset of YAML that kubeconfigs and EdgePlacement specs are written in, and a
// dumper whose output it reads back. JSON is accepted too (it is YAML's flow style).
//
// Supported: one document (an optional leading `---`), block mappings and sequences (a sequence may sit at
// its key's indentation, as kubectl and PyYAML write them), compact `- key: value` items, plain, 'single-'
// and "double-quoted" scalars on one line, `|` and `>` block scalars (with `-`/`+` chomping), flow `[…]`
// and `{…}` collections, comments. Refused with a message naming the line: anchors, aliases, tags, several
// documents, tabs in indentation, quoted scalars spanning lines, duplicate keys.

export class YamlError extends Error {}

const NUMBER = /^[-+]?(\d[\d_]*)?(\.\d*)?([eE][-+]?\d+)?$/;

function scalarOf(text) {
  if (text === '' || text === '~' || /^(null|Null|NULL)$/.test(text)) return null;
  if (/^(true|True|TRUE)$/.test(text)) return true;
  if (/^(false|False|FALSE)$/.test(text)) return false;
  if (/^[-+]?\d+$/.test(text)) return Number(text);
  if (/^0x[0-9a-fA-F]+$/.test(text)) return parseInt(text, 16);
  if (/^0o[0-7]+$/.test(text)) return parseInt(text.slice(2), 8);
  if (/\d/.test(text) && NUMBER.test(text)) return Number(text.replace(/_/g, ''));
  if (/^[-+]?\.(inf|Inf|INF)$/.test(text)) return text.startsWith('-') ? -Infinity : Infinity;
  if (/^\.(nan|NaN|NAN)$/.test(text)) return NaN;
  return text;
}

const ESCAPES = { n: '\n', t: '\t', r: '\r', '"': '"', '\\': '\\', '/': '/', '0': '\0', b: '\b', f: '\f', ' ': ' ' };

// A quoted scalar at text[start]; returns [value, index after the closing quote].
function quoted(text, start, line) {
  const quote = text[start];
  let out = '';
  for (let i = start + 1; i < text.length; i++) {
    const c = text[i];
    if (quote === "'" && c === "'") {
      if (text[i + 1] === "'") { out += "'"; i++; continue; }
      return [out, i + 1];
    }
    if (quote === '"' && c === '"') return [out, i + 1];
    if (quote === '"' && c === '\\') {
      const e = text[i + 1];
      if (e === 'u' || e === 'x' || e === 'U') {
        const size = { x: 2, u: 4, U: 8 }[e];
        const hex = text.slice(i + 2, i + 2 + size);
        if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== size) throw new YamlError(`line ${line}: bad escape \\${e}${hex}`);
        out += String.fromCodePoint(parseInt(hex, 16));
        i += 1 + size;
      } else if (e in ESCAPES) {
        out += ESCAPES[e];
        i++;
      } else {
        throw new YamlError(`line ${line}: unknown escape \\${e}`);
      }
      continue;
    }
    out += c;
  }
  throw new YamlError(`line ${line}: the quoted string does not end on this line (strings spanning lines are not supported)`);
}

function refuseSpecial(text, line) {
  if (/^[&*!]/.test(text)) {
    const what = { '&': 'anchors', '*': 'aliases', '!': 'tags' }[text[0]];
    throw new YamlError(`line ${line}: YAML ${what} are not supported`);
  }
  if (/^[|>]/.test(text)) throw new YamlError(`line ${line}: a block scalar must follow a key`);
}

// Flow collections and scalars inside them: a small recursive parser over one line.
class Flow {
  constructor(text, line) { this.text = text; this.i = 0; this.line = line; }
  fail(what) { throw new YamlError(`line ${this.line}: ${what} in "${this.text}"`); }
  ws() { while (this.i < this.text.length && /\s/.test(this.text[this.i])) this.i++; }
  value(inMap) {
    this.ws();
    const c = this.text[this.i];
    if (c === '[') return this.seq();
    if (c === '{') return this.map();
    if (c === '"' || c === "'") {
      const [value, end] = quoted(this.text, this.i, this.line);
      this.i = end;
      return value;
    }
    const start = this.i;
    while (this.i < this.text.length) {
      const d = this.text[this.i];
      if (d === ',' || d === ']' || d === '}') break;
      if (inMap && d === ':' && /[\s,\]}]/.test(this.text[this.i + 1] || ' ')) break;
      this.i++;
    }
    const plain = this.text.slice(start, this.i).trim();
    refuseSpecial(plain, this.line);
    return scalarOf(plain);
  }
  seq() {
    this.i++;
    const out = [];
    for (;;) {
      this.ws();
      if (this.text[this.i] === ']') { this.i++; return out; }
      out.push(this.value(false));
      this.ws();
      if (this.text[this.i] === ',') this.i++;
      else if (this.text[this.i] !== ']') this.fail('expected , or ]');
    }
  }
  map() {
    this.i++;
    const out = {};
    for (;;) {
      this.ws();
      if (this.text[this.i] === '}') { this.i++; return out; }
      const key = this.value(true);
      this.ws();
      let value = null;
      if (this.text[this.i] === ':') { this.i++; value = this.value(true); }
      out[String(key)] = value;
      this.ws();
      if (this.text[this.i] === ',') this.i++;
      else if (this.text[this.i] !== '}') this.fail('expected , or }');
    }
  }
  whole() {
    const value = this.value(false);
    this.ws();
    if (this.i < this.text.length) this.fail('unexpected text after the value');
    return value;
  }
}

function stripComment(text) {
  let quote = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") {
      if (i === 0 || /[\s:[{,-]/.test(text[i - 1])) quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]))) {
      return text.slice(0, i).trimEnd();
    }
  }
  return text.trimEnd();
}

function isSeqItem(text) { return text === '-' || text.startsWith('- '); }

function isMarker(head) { return head.indent === 0 && (head.text.startsWith('---') || head.text === '...'); }

// [key, rest] when the line is `key: rest` (or `key:`), else null.
function splitKey(text, line) {
  if (text[0] === '"' || text[0] === "'") {
    const [key, end] = quoted(text, 0, line);
    const after = text.slice(end).trimStart();
    if (after[0] !== ':' || (after.length > 1 && !/\s/.test(after[1]))) return null;
    return [key, after.slice(1).trim()];
  }
  if (/^[[{]/.test(text)) return null;
  const match = /:(\s|$)/.exec(text);
  if (!match) return null;
  const key = text.slice(0, match.index).trim();
  refuseSpecial(key, line);
  if (key.startsWith('? ')) throw new YamlError(`line ${line}: complex keys (?) are not supported`);
  return [key, text.slice(match.index + 1).trim()];
}

class Parser {
  constructor(text) {
    this.lines = text.replace(/\r\n?/g, '\n').split('\n');
    this.i = 0;
  }

  peek() {
    while (this.i < this.lines.length) {
      const raw = this.lines[this.i];
      const body = raw.trimStart();
      if (body === '' || body.startsWith('#')) { this.i++; continue; }
      const lead = raw.slice(0, raw.length - body.length);
      if (lead.includes('\t')) throw new YamlError(`line ${this.i + 1}: tabs are not allowed in indentation`);
      return { indent: lead.length, text: stripComment(body), line: this.i + 1 };
    }
    return null;
  }

  document() {
    let first = this.peek();
    if (first && first.text.startsWith('%')) throw new YamlError(`line ${first.line}: YAML directives are not supported`);
    if (first && first.text === '---') { this.i++; first = this.peek(); }
    if (!first) return null;
    const value = this.block(0);
    const rest = this.peek();
    if (rest && rest.text === '...' ) this.i++;
    const more = this.peek();
    if (more) {
      if (more.text.startsWith('---')) throw new YamlError(`line ${more.line}: several documents are not supported`);
      throw new YamlError(`line ${more.line}: unexpected indentation or text: "${more.text}"`);
    }
    return value;
  }

  block(minIndent) {
    const head = this.peek();
    if (!head || head.indent < minIndent) return null;
    if (isSeqItem(head.text)) return this.seq(head.indent);
    if (splitKey(head.text, head.line)) return this.map(head.indent);
    this.i++;
    refuseSpecial(head.text, head.line);
    return new Flow(head.text, head.line).whole();
  }

  // Parses the item after `- ` at its own column by rewriting the line as if it started there.
  item(head) {
    const rest = head.text.slice(1).trimStart();
    if (rest === '') {
      this.i++;
      const next = this.peek();
      return next && next.indent > head.indent ? this.block(head.indent + 1) : null;
    }
    const column = head.indent + (head.text.length - rest.length);
    this.lines[this.i] = ' '.repeat(column) + rest;
    return this.block(column);
  }

  seq(indent) {
    const out = [];
    for (let head = this.peek(); head && !isMarker(head) && head.indent === indent && isSeqItem(head.text); head = this.peek()) {
      out.push(this.item(head));
    }
    const next = this.peek();
    if (next && next.indent > indent) throw new YamlError(`line ${next.line}: unexpected indentation`);
    return out;
  }

  map(indent) {
    const out = {};
    for (let head = this.peek(); head && !isMarker(head) && head.indent === indent; head = this.peek()) {
      const pair = splitKey(head.text, head.line);
      if (!pair) throw new YamlError(`line ${head.line}: expected "key: value", found "${head.text}"`);
      const [key, rest] = pair;
      if (Object.prototype.hasOwnProperty.call(out, key)) throw new YamlError(`line ${head.line}: duplicate key "${key}"`);
      this.i++;
      if (rest === '') {
        const next = this.peek();
        if (next && next.indent > indent) out[key] = this.block(next.indent);
        else if (next && next.indent === indent && isSeqItem(next.text)) out[key] = this.seq(indent);
        else out[key] = null;
      } else if (/^[|>]/.test(rest)) {
        out[key] = this.blockScalar(rest, indent, head.line);
      } else {
        refuseSpecial(rest, head.line);
        out[key] = new Flow(rest, head.line).whole();
      }
    }
    const next = this.peek();
    if (next && next.indent > indent) throw new YamlError(`line ${next.line}: unexpected indentation`);
    return out;
  }

  blockScalar(header, parentIndent, line) {
    const match = /^([|>])([-+]?)$/.exec(header);
    if (!match) throw new YamlError(`line ${line}: unsupported block scalar header "${header}"`);
    const [, style, chomp] = match;
    const raw = [];
    let indent = -1;
    while (this.i < this.lines.length) {
      const text = this.lines[this.i];
      if (text.trim() === '') { raw.push(''); this.i++; continue; }
      const lead = text.length - text.trimStart().length;
      if (lead <= parentIndent) break;
      if (indent < 0) indent = lead;
      if (lead < indent) break;
      raw.push(text.slice(indent));
      this.i++;
    }
    let trailing = 0;
    while (raw.length && raw[raw.length - 1] === '') { raw.pop(); trailing++; }
    let body;
    if (style === '|') {
      body = raw.join('\n');
    } else {
      body = '';
      raw.forEach((text, n) => {
        if (n === 0) body = text;
        else if (text === '' || raw[n - 1] === '' || /^\s/.test(text)) body += '\n' + text;
        else body += ' ' + text;
      });
    }
    if (raw.length === 0) return '';
    if (chomp === '-') return body;
    if (chomp === '+') return body + '\n'.repeat(trailing + 1);
    return body + '\n';
  }
}

export function parseYaml(text) {
  const trimmed = text.trim();
  if (/^[[{]/.test(trimmed)) {
    try { return JSON.parse(trimmed); } catch { /* YAML flow style, not JSON: parsed below */ }
  }
  return new Parser(text).document();
}

// --- dumping ------------------------------------------------------------------------------------------

function needsQuotes(text) {
  return text === '' || text !== text.trim() || /[\n\r\t]/.test(text) || /^[-?:,[\]{}#&*!|>'"%@`]/.test(text) ||
    /: |:$| #/.test(text) || scalarOf(text) !== text;
}

function scalar(value) {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return needsQuotes(value) ? JSON.stringify(value) : value;
  return String(value);
}

function isEmpty(value) {
  return Array.isArray(value) ? value.length === 0 : Object.keys(value).length === 0;
}

function lines(value, pad) {
  if (Array.isArray(value)) {
    return value.flatMap((item) => {
      if (item !== null && typeof item === 'object' && !isEmpty(item)) {
        const [first, ...rest] = lines(item, pad + '  ');
        return [`${pad}- ${first.trimStart()}`, ...rest];
      }
      return [`${pad}- ${item !== null && typeof item === 'object' ? (Array.isArray(item) ? '[]' : '{}') : scalar(item)}`];
    });
  }
  return Object.entries(value).flatMap(([key, item]) => {
    if (item !== null && typeof item === 'object') {
      if (isEmpty(item)) return [`${pad}${scalar(key)}: ${Array.isArray(item) ? '[]' : '{}'}`];
      return [`${pad}${scalar(key)}:`, ...lines(item, pad + '  ')];
    }
    return [`${pad}${scalar(key)}: ${scalar(item)}`];
  });
}

export function dumpYaml(value) {
  if (value === null || typeof value !== 'object') return scalar(value) + '\n';
  if (isEmpty(value)) return (Array.isArray(value) ? '[]' : '{}') + '\n';
  return lines(value, '').join('\n') + '\n';
}
