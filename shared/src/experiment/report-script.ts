/**
 * The report's one inline script: click a column header to sort a table (again to reverse), type in a filter box
 * to hide the rows that do not match. The report's Content-Security-Policy allows exactly this text by its
 * SHA-256 hash, so nothing else can run, and the report reads fully without it: the tables are plain HTML and
 * the filter boxes stay hidden until the script shows them.
 *
 * Markup it reads: `table.sortable` (every header cell of the first head row sorts its column; a cell's
 * `data-v` is its numeric sort key, `data-v=""` sorts last, cells without one sort by text, numbers inside text
 * numerically); `.table-tools[data-for=ID]` (hidden) holding an `input`, an optional `select` of row flags
 * matched against a row's space-separated `data-flags`, and an `output` for the count. A row's filter text is
 * its cells' text and `title`s, without collapsed `details` (retrieved contexts).
 */
import { createHash } from 'node:crypto';

/** The script, exactly as embedded (its hash is over these characters). ES2017, no dependencies. */
export const REPORT_SCRIPT = `(function () {
  'use strict';
  function sortKey(cell) {
    if (cell === undefined) return null;
    var v = cell.getAttribute('data-v');
    if (v !== null) return v === '' ? null : Number(v);
    var t = cell.textContent.trim();
    return t === '' || t === 'n/a' || t === '\\u2013' ? null : t;
  }
  function compare(a, b) {
    if (typeof a === 'number' && typeof b === 'number') return a - b;
    return String(a).localeCompare(String(b), 'en', { numeric: true, sensitivity: 'base' });
  }
  function sortBy(table, col, th) {
    var dir = th.getAttribute('aria-sort') === 'ascending' ? 'descending' : 'ascending';
    var heads = table.tHead.rows[0].cells;
    for (var h = 0; h < heads.length; h++) heads[h].removeAttribute('aria-sort');
    th.setAttribute('aria-sort', dir);
    var sign = dir === 'ascending' ? 1 : -1;
    var body = table.tBodies[0];
    var keyed = Array.prototype.map.call(body.rows, function (row, i) {
      return { row: row, k: sortKey(row.cells[col]), i: i };
    });
    keyed.sort(function (a, b) {
      if (a.k === null || b.k === null) {
        if (a.k === null && b.k === null) return a.i - b.i;
        return a.k === null ? 1 : -1;
      }
      return sign * compare(a.k, b.k) || a.i - b.i;
    });
    keyed.forEach(function (x) { body.appendChild(x.row); });
  }
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      var button = document.createElement('button');
      button.type = 'button';
      button.className = 'sort';
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      button.addEventListener('click', function () { sortBy(table, col, th); });
    });
  });
  function textOf(node) {
    var s = node.nodeType === 1 && node.hasAttribute('title') ? ' ' + node.getAttribute('title') : '';
    Array.prototype.forEach.call(node.childNodes, function (n) {
      if (n.nodeType === 3) s += n.nodeValue;
      else if (n.nodeType === 1 && n.tagName !== 'DETAILS') s += ' ' + textOf(n);
    });
    return s;
  }
  Array.prototype.forEach.call(document.querySelectorAll('.table-tools'), function (tools) {
    var table = document.getElementById(tools.getAttribute('data-for'));
    if (table === null) return;
    var input = tools.querySelector('input');
    var select = tools.querySelector('select');
    var out = tools.querySelector('output');
    var texts = new Map();
    function apply() {
      var terms = input.value.toLowerCase().split(/\\s+/).filter(Boolean);
      var flag = select === null ? '' : select.value;
      var rows = table.tBodies[0].rows;
      var shown = 0;
      for (var r = 0; r < rows.length; r++) {
        var row = rows[r];
        if (!texts.has(row)) texts.set(row, textOf(row).toLowerCase());
        var text = texts.get(row);
        var flags = ' ' + (row.getAttribute('data-flags') || '') + ' ';
        var ok = terms.every(function (t) { return text.indexOf(t) !== -1; }) &&
          (flag === '' || flags.indexOf(' ' + flag + ' ') !== -1);
        row.hidden = !ok;
        if (ok) shown++;
      }
      out.textContent = shown === rows.length ? 'all ' + rows.length + ' rows' : shown + ' of ' + rows.length + ' rows';
    }
    input.addEventListener('input', apply);
    if (select !== null) select.addEventListener('change', apply);
    tools.hidden = false;
    apply();
  });
})();`;

/** The CSP source allowing {@link REPORT_SCRIPT}: `'sha256-<base64>'`. */
export const REPORT_SCRIPT_HASH = `'sha256-${createHash('sha256').update(REPORT_SCRIPT, 'utf8').digest('base64')}'`;
