// report.html: the question table (filters, search, sort) and the per-question drill-down.
// Data: #lme-data (JSON, parsed at load) and #lme-texts (session turns and prompt lines: base64 of zlib-compressed
// JSON, unpacked once, on the first drill-down). Every data string reaches the page through textContent, never as HTML.
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('lme-data').textContent);
  var T = null, pending = null;
  function loadTexts() {  // a Promise of {s: session turns by index, l: prompt lines by index}
    if (pending === null) {
      var parsed = document.readyState === 'loading'  // the blob follows this script: wait until it is all read
        ? new Promise(function (r) { document.addEventListener('DOMContentLoaded', r); }) : Promise.resolve();
      pending = parsed.then(function () {
        if (typeof DecompressionStream === 'undefined') throw new Error('this browser cannot unpack the texts (no DecompressionStream)');
        var bin = atob(document.getElementById('lme-texts').textContent), bytes = new Uint8Array(bin.length);
        for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
        return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'))).text();
      }).then(function (text) { T = JSON.parse(text); window.lmeReport.textsAt = performance.now(); return T; });
    }
    return pending;
  }
  function texts() { return T; }

  var h = lmeDom.h, pill = lmeDom.pill;  // dom.js
  function fmtUsd(v) { return v === null || v === undefined ? '—' : '$' + v.toFixed(4); }
  function fmtS(ms) { return ms === null || ms === undefined ? '—' : (ms / 1000).toFixed(2) + ' s'; }
  var STATE_LABEL = { correct: 'correct', wrong: 'wrong', error: 'error', not_run: 'not run' };

  // ------------------------------------------------------------------ notes
  if (D.notes.length) {
    var notes = document.getElementById('notes');
    notes.appendChild(h('ul', null));
    D.notes.forEach(function (n) { notes.firstChild.appendChild(h('li', { text: n })); });
  }

  // ------------------------------------------------------------------ table
  var COLUMNS = [
    ['id', 'question id', function (q) { return q.id; }],
    ['type', 'type', function (q) { return q.type; }],
    ['abs', 'abstention', function (q) { return q.abs ? 1 : 0; }],
    ['state', 'label', function (q) { return q.state; }],
    ['err', 'error kind', function (q) { return q.err ? q.err.kind : ''; }],
    ['cost', 'cost', function (q) { return q.cost === null ? -1 : q.cost; }],
    ['lat', 'latency', function (q) { return q.lat === null ? -1 : q.lat; }],
    ['cached', 'cached', function (q) { return q.cached || ''; }],
    ['flaky', 'flaky judge', function (q) { return q.flaky ? 1 : 0; }],
    ['q', 'question', function (q) { return q.q || ''; }]
  ];
  var table = document.getElementById('questions');
  var headRow = h('tr', null);
  COLUMNS.forEach(function (c) { headRow.appendChild(h('th', { 'data-sort': c[0], text: c[1] })); });
  table.tHead.appendChild(headRow);
  var tbody = table.tBodies[0];
  var rowOf = {};
  D.questions.forEach(function (q, i) {
    q._i = i;
    q._hay = [q.id, q.q, q.hyp, String(q.gold === null || q.gold === undefined ? '' : q.gold), q.err ? q.err.message : '']
      .join('\n').toLowerCase();
    var tr = h('tr', { 'data-qid': q.id },
      h('td', { cls: 'mono', text: q.id }),
      h('td', { text: q.type }),
      h('td', { text: q.abs ? 'yes' : '' }),
      h('td', null, pill(q.state, STATE_LABEL[q.state])),
      h('td', { text: q.err ? q.err.kind : '' }),
      h('td', { cls: 'num', text: fmtUsd(q.cost) }),
      h('td', { cls: 'num', text: fmtS(q.lat) }),
      h('td', { text: q.cached || '' }),
      h('td', null, q.flaky ? pill('flaky', 'flaky') : null),
      h('td', { cls: 'text', text: q.q || '' }));
    tr.addEventListener('click', function () { openDrawer(q.id); });
    rowOf[q.id] = tr;
    tbody.appendChild(tr);
  });
  var sortKey = null, sortDir = 1;
  headRow.addEventListener('click', function (ev) {
    var key = ev.target.getAttribute('data-sort');
    if (!key) return;
    sortDir = sortKey === key ? -sortDir : 1;
    sortKey = key;
    var get = COLUMNS.filter(function (c) { return c[0] === key; })[0][2];
    var order = D.questions.slice().sort(function (a, b) {
      var x = get(a), y = get(b);
      return (x < y ? -1 : x > y ? 1 : a._i - b._i) * sortDir;
    });
    order.forEach(function (q) { tbody.appendChild(rowOf[q.id]); });
  });

  // ------------------------------------------------------------------ filters
  var filters = document.getElementById('filters');
  function select(id, label, options) { return lmeDom.select(filters, id, label, options, apply); }  // dom.js
  var fType = select('f-type', 'type', [['', 'all types']].concat(D.types.map(function (t) { return [t, t]; })));
  var fState = select('f-state', 'label', [['', 'all'], ['correct', 'correct'], ['wrong', 'wrong'],
    ['error', 'error'], ['not_run', 'not run'], ['wrong|error|not_run', 'not correct (wrong, error, not run)']]);
  var fAbs = select('f-abs', 'abstention', [['', 'all'], ['yes', 'abstention only'], ['no', 'no abstention']]);
  var fFlaky = select('f-flaky', 'judge', [['', 'all'], ['yes', 'flaky only']]);
  var fSearch = h('input', { type: 'search', id: 'f-search', placeholder: 'search id, question, answers, errors' });
  filters.appendChild(fSearch);
  fSearch.addEventListener('input', apply);
  var count = h('span', { cls: 'count', id: 'shown-count' });
  filters.appendChild(count);

  function apply() {
    var type = fType.value, states = fState.value ? fState.value.split('|') : null, abs = fAbs.value;
    var flaky = fFlaky.value === 'yes', needle = fSearch.value.trim().toLowerCase();
    var shown = 0;
    D.questions.forEach(function (q) {
      var ok = (!type || q.type === type) && (!states || states.indexOf(q.state) >= 0) &&
        (!abs || (abs === 'yes') === q.abs) && (!flaky || !!q.flaky) && (!needle || q._hay.indexOf(needle) >= 0);
      rowOf[q.id].hidden = !ok;
      if (ok) shown++;
    });
    count.textContent = shown + ' of ' + D.questions.length + ' questions shown';
  }
  apply();

  // ------------------------------------------------------------------ drill-down
  var drawer = document.getElementById('drawer');
  var current = null;

  function kv(pairs) {
    var box = h('div', { cls: 'kv' });
    pairs.forEach(function (p) {
      if (p[1] === undefined) return;
      box.appendChild(h('div', { text: p[0] }));
      box.appendChild(h('div', { cls: p[2] || '', text: p[1] === null ? '—' : String(p[1]) }));
    });
    return box;
  }

  function promptText(segments, pre, qid) {
    var t = texts();
    segments.forEach(function (s, i) {
      if (i) pre.appendChild(document.createTextNode('\n'));
      if (typeof s === 'string') { pre.appendChild(document.createTextNode(s)); return; }
      var line = t.l[s];
      if (line !== null && line !== undefined) { pre.appendChild(document.createTextNode(line)); return; }
      var chars = D.line_chars[s];
      pre.appendChild(h('span', { cls: 'omitted', text: chars < 0
        ? '[line missing from prompts.jsonl]'
        : '[' + chars.toLocaleString() + ' characters not embedded in this page (size budget); print the whole ' +
          'prompt with: ' + D.prompt_command.replace('QID', qid) + ']' }));
    });
  }

  function sessionBlock(ref, qid) {
    var s = D.sessions[ref[0]], rank = ref[1], flags = ref[2];
    var turns = texts().s[ref[0]];
    var tags = [];
    if (flags.indexOf('e') >= 0) tags.push(pill('ev', 'evidence'));
    if (flags.indexOf('x') >= 0) tags.push(pill('wrong', 'evidence not given to the reader (outside the top k)'));
    if (flags.indexOf('d') >= 0) tags.push(pill('error', 'dropped to fit the context window'));
    var summary = h('summary', null, rank ? '#' + rank + ' · ' : '', h('span', { cls: 'mono', text: s.id }),
      ' · ' + (s.date || 'date unknown') + (s.turns ? ' · ' + s.turns + ' turns' : '') + ' ');
    tags.forEach(function (t) { summary.appendChild(t); summary.appendChild(document.createTextNode(' ')); });
    var det = h('details', { cls: 'session' + (flags.indexOf('e') >= 0 ? ' evidence' : '') }, summary);
    if (flags.indexOf('e') >= 0) det.open = true;
    if (turns) {
      var box = h('div', { cls: 'turns' });
      turns.forEach(function (t) {
        box.appendChild(h('div', { cls: 'turn' + (t[2] ? ' has-answer' : '') }, h('span', { cls: 'role', text: t[0] + ': ' }),
          t[1]));
      });
      det.appendChild(box);
    } else {
      det.appendChild(h('p', { cls: 'note', text: s.turns === null
        ? 'Text not available (the dataset file is not readable here).'
        : 'Text not embedded in this page (size budget); the prompt below holds what the reader saw.' }));
    }
    return det;
  }

  function openDrawer(qid) {
    var q = D.questions.filter(function (x) { return x.id === qid; })[0];
    if (!q) return;
    if (current && rowOf[current]) rowOf[current].classList.remove('selected');
    current = qid;
    rowOf[qid].classList.add('selected');
    drawer.textContent = '';
    var close = h('button', { cls: 'close', title: 'close (Esc)', 'aria-label': 'close', text: '×' });
    close.addEventListener('click', closeDrawer);
    drawer.appendChild(close);
    var head = h('h2', null, h('span', { cls: 'mono', text: q.id }), ' ', pill(q.state, STATE_LABEL[q.state]), ' ',
      pill('muted', q.type), q.abs ? ' ' : null, q.abs ? pill('muted', 'abstention') : null,
      q.flaky ? ' ' : null, q.flaky ? pill('flaky', 'flaky judge') : null);
    drawer.appendChild(head);

    drawer.appendChild(h('h3', { text: 'Question' }));
    drawer.appendChild(h('div', { cls: 'box', id: 'd-question', text: q.q || '—' }));
    drawer.appendChild(h('p', { cls: 'note', text: 'Asked on ' + (q.qdate || '(date unknown: dataset not readable)') }));
    drawer.appendChild(h('h3', null, 'Gold answer ', pill('gold', 'GOLD — shown only in this report')));
    drawer.appendChild(h('div', { cls: 'box gold', id: 'd-gold', text: q.gold === null || q.gold === undefined ? '—' : String(q.gold) }));
    drawer.appendChild(h('h3', { text: 'Hypothesis (the target\'s answer)' }));
    drawer.appendChild(h('div', { cls: 'box hyp', id: 'd-hyp', text: q.hyp === null || q.hyp === undefined ? '— (no hypothesis)' : q.hyp }));

    if (q.err) {
      drawer.appendChild(h('h3', { text: 'Error' }));
      drawer.appendChild(kv([['stage', q.err.stage], ['kind', q.err.kind], ['attempts', q.err.attempts]]));
      drawer.appendChild(h('pre', { text: q.err.message || '' }));
    }
    var j = q.judge;
    drawer.appendChild(h('h3', { text: 'Judge' }));
    if (j) {
      drawer.appendChild(kv([['label', j.label ? 'yes (correct)' : 'no (wrong)'], ['model', j.model],
        ['official', j.official], ['prompt sha256', j.prompt_sha256, 'mono'],
        ['template sha256', j.template_sha256, 'mono'], ['cached', j.cached], ['attempts', j.attempts],
        ['latency', fmtS(j.latencyMs)]]));
      if (j.origin) {
        drawer.appendChild(h('p', { cls: 'note', id: 'd-judge-origin', text: j.origin.kind === 'made'
          ? 'From the verdict archive: made in this project (' + (j.origin.by || '?') + ')' +
            (j.endpoint_host ? ' at ' + j.endpoint_host : '') + '.'
          : 'From the verdict archive: imported from ' + (j.origin.file || 'a file') +
            ' (its author\'s claim: no judge call of this installation made it).' }));
      }
      drawer.appendChild(h('p', { cls: 'note', text: 'Raw reply:' }));
      drawer.appendChild(h('pre', { id: 'd-judge-raw', text: j.raw === null || j.raw === undefined
        ? (j.source === 'archive' ? '(label only: its source published no judge reply)' : '') : j.raw }));
      if (j.verdicts && j.verdicts.length) {
        drawer.appendChild(h('p', { cls: 'note', text: 'Repeated verdicts: ' + j.verdicts.map(function (v) {
          return (v.label ? 'yes' : 'no') + (v.source ? ' (' + v.source + ')' : ''); }).join(', ') }));
      }
    } else {
      drawer.appendChild(h('p', { cls: 'note', text: 'Not judged.' }));
    }
    if (q.flaky) {
      drawer.appendChild(h('p', { cls: 'note', text: 'Flaky judge: this exact judge prompt got ' + q.flaky.yes +
        ' yes and ' + q.flaky.no + ' no (' + q.flaky.source + ').' }));
    }

    drawer.appendChild(h('h3', { text: 'Target' }));
    var tr = q.trunc;
    drawer.appendChild(kv([['cost', fmtUsd(q.cost)], ['latency', fmtS(q.lat)],
      ['tokens in / out', (q.tokens[0] || 0) + ' / ' + (q.tokens[1] || 0)], ['cached calls', q.cached],
      ['model calls', q.calls.map(function (c) { return (c.role || '?') + ' ' + c.model + (c.cached ? ' (cached)' : ''); }).join(', ') || 'none'],
      ['truncation', tr ? (tr.truncated ? 'history cut: ' + tr.dropped_sessions + ' oldest session(s) dropped' +
        (tr.dropped_evidence ? ', ' + tr.dropped_evidence + ' of them evidence' : '') : 'none' +
        (tr.kept_sessions !== null ? ' (' + tr.kept_sessions + ' sessions' + (tr.tokens !== null ? ', ' + tr.tokens +
        ' tokens ' + (tr.counted_with || '') : '') + ')' : '')) : undefined],
      ['pipeline stages', q.stages.length ? q.stages.join('\n') : undefined]]));
    var dbg = h('details', null, h('summary', { text: 'debug (as the target reported it)' }));
    dbg.appendChild(h('pre', { text: JSON.stringify(q.debug, null, 2) }));
    drawer.appendChild(dbg);

    var bulk = h('div', { id: 'd-texts' }, h('p', { cls: 'note', text: 'Unpacking session and prompt texts…' }));
    drawer.appendChild(bulk);
    drawer.hidden = false;
    drawer.scrollTop = 0;
    setHash('#q=' + encodeURIComponent(qid));
    loadTexts().then(function () {
      if (current !== qid) return;
      bulk.textContent = '';
      renderTexts(q, bulk);
      bulk.setAttribute('data-ready', '1');
    }, function (err) {
      bulk.textContent = '';
      bulk.appendChild(h('p', { cls: 'note', text: 'Session and prompt texts unavailable: ' + err.message }));
    });
  }

  function renderTexts(q, drawer) {
    drawer.appendChild(h('h3', { text: 'Sessions (' + q.sess.length + ')' }));
    if (!q.sess.length) drawer.appendChild(h('p', { cls: 'note', text: 'No session list (dataset not readable here).' }));
    var list = h('div', { id: 'd-sessions' });
    q.sess.forEach(function (ref) { list.appendChild(sessionBlock(ref, q.id)); });
    drawer.appendChild(list);

    drawer.appendChild(h('h3', { text: 'Prompts the target sent (' + q.prompts.length + ')' }));
    if (!q.prompts.length) drawer.appendChild(h('p', { cls: 'note', text: 'None stored (no model call, or a run made before prompts.jsonl).' }));
    q.prompts.forEach(function (p, i) {
      var det = h('details', { cls: 'prompt' }, h('summary', null, 'request ' + (i + 1) + ' · ' +
        (p.missing ? 'not in prompts.jsonl' : p.provider + ':' + p.model + ' · max_tokens ' + p.max_tokens + ' · ' +
          (p.chars || 0).toLocaleString() + ' characters · '), h('span', { cls: 'mono', text: p.key.slice(0, 16) })));
      if (i === q.prompts.length - 1) det.open = true;
      if (!p.missing) {
        if (p.system) { var sp = h('pre', null); promptText(p.system, sp, q.id); det.appendChild(h('p', { cls: 'note', text: 'system' })); det.appendChild(sp); }
        p.messages.forEach(function (m) {
          det.appendChild(h('p', { cls: 'note', text: m.role }));
          var pre = h('pre', { cls: 'prompt-text' });
          promptText(m.seg, pre, q.id);
          det.appendChild(pre);
        });
      }
      drawer.appendChild(det);
    });
  }
  function closeDrawer() {
    drawer.hidden = true;
    if (current && rowOf[current]) rowOf[current].classList.remove('selected');
    current = null;
    setHash('');
  }
  function setHash(hash) {  // a deep link to the open question; some file:// contexts refuse history changes
    try { history.replaceState(null, '', hash || location.pathname + location.search); } catch (e) { /* ignore */ }
  }
  function step(dir) {
    var rows = Array.prototype.filter.call(tbody.rows, function (r) { return !r.hidden; });
    var i = rows.indexOf(rowOf[current]);
    var next = rows[i + dir];
    if (next) { openDrawer(next.getAttribute('data-qid')); next.scrollIntoView({ block: 'nearest' }); }
  }
  document.addEventListener('keydown', function (ev) {
    if (drawer.hidden || ev.target.tagName === 'INPUT') return;
    if (ev.key === 'Escape') closeDrawer();
    else if (ev.key === 'ArrowDown' || ev.key === 'j') { ev.preventDefault(); step(1); }
    else if (ev.key === 'ArrowUp' || ev.key === 'k') { ev.preventDefault(); step(-1); }
  });
  var m = /^#q=(.+)$/.exec(location.hash);
  if (m) openDrawer(decodeURIComponent(m[1]));
  // Unpack the texts once the page is idle, so the first drill-down need not wait for it.
  window.addEventListener('load', function () {
    var later = window.requestIdleCallback || function (f) { return setTimeout(f, 200); };
    later(function () { loadTexts().catch(function () { /* the drill-down says why */ }); }, { timeout: 2000 });
  });
  window.lmeReport = { open: openDrawer, close: closeDrawer, apply: apply, texts: loadTexts, readyAt: performance.now() };
})();
