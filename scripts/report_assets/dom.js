// The report pages' one DOM helper (report.html and compare-*.html load it before their own script): elements are
// built from data through textContent and setAttribute only, never as HTML.
var lmeDom = (function () {
  'use strict';
  function h(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === 'text') node.textContent = attrs[k];
      else if (k === 'cls') node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return node;
  }
  function pill(cls, text) { return h('span', { cls: 'pill ' + cls, text: text }); }
  // A labelled <select> of [value, text] options appended to ``parent``, calling ``onChange`` on each change.
  function select(parent, id, label, options, onChange) {
    var s = h('select', { id: id });
    options.forEach(function (o) { s.appendChild(h('option', { value: o[0], text: o[1] })); });
    parent.appendChild(h('label', { 'for': id, text: label }));
    parent.appendChild(s);
    s.addEventListener('change', onChange);
    return s;
  }
  return { h: h, pill: pill, select: select };
})();
