// compare-*.html: filters over the flipped questions, each shown before | after.
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('lme-data').textContent);
  var h = lmeDom.h, pill = lmeDom.pill;  // dom.js
  function side(name, s) {
    var state = s.status === 'judged' ? (s.label ? 'correct' : 'wrong') : s.status;
    var box = h('div', { cls: 'side' }, h('p', null, h('b', { text: name + ' ' }), pill(state, state.replace('_', ' '))));
    box.appendChild(h('div', { cls: 'box hyp', text: s.hyp === null || s.hyp === undefined ? '— (no hypothesis)' : s.hyp }));
    if (s.raw !== null && s.raw !== undefined) {
      box.appendChild(h('p', { cls: 'note', text: 'judge (' + s.judge_model + ') replied:' }));
      box.appendChild(h('pre', { text: s.raw }));
    }
    if (s.err) box.appendChild(h('pre', { text: s.err.stage + ' ' + s.err.kind + ': ' + s.err.message }));
    return box;
  }
  var list = document.getElementById('flips');
  var cards = D.flips.map(function (f) {
    var head = h('div', { cls: 'head' }, h('b', { cls: 'mono', text: f.id }), ' ', pill(f.fix ? 'correct' : 'wrong',
      f.fix ? 'fix' : 'regression'), ' ', pill('muted', f.type), f.flaky ? ' ' : null, f.flaky ? pill('flaky', 'flaky judge') : null,
      h('div', { cls: 'box', text: f.q || '' }), h('p', null, pill('gold', 'GOLD'), ' ',
        document.createTextNode(f.gold === null || f.gold === undefined ? '—' : String(f.gold))));
    var card = h('div', { cls: 'flip', 'data-qid': f.id }, head, side('before (' + D.a + ')', f.sides[0]),
      side('after (' + D.b + ')', f.sides[1]));
    list.appendChild(card);
    return card;
  });
  var filters = document.getElementById('filters');
  function select(id, label, options) { return lmeDom.select(filters, id, label, options, apply); }  // dom.js
  var fKind = select('f-kind', 'change', [['', 'all'], ['fix', 'fixes'], ['regression', 'regressions']]);
  var fType = select('f-type', 'type', [['', 'all types']].concat(D.types.map(function (t) { return [t, t]; })));
  var count = h('span', { cls: 'count', id: 'shown-count' });
  filters.appendChild(count);
  function apply() {
    var shown = 0;
    D.flips.forEach(function (f, i) {
      var ok = (!fKind.value || (fKind.value === 'fix') === f.fix) && (!fType.value || fType.value === f.type);
      cards[i].hidden = !ok;
      if (ok) shown++;
    });
    count.textContent = shown + ' of ' + D.flips.length + ' flipped questions shown';
  }
  apply();
})();
