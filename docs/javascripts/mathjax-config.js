// MathJax 3 for every page: docs pages write \( \) and \[ \] (pymdownx.arithmatex, generic mode); notebook
// pages keep the $ and $$ their markdown cells were written with (nbconvert leaves them as they are).
// The script itself is served from the site (docs/hooks.py copies it from the django-static-mathjax
// package), so pages typeset offline.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"], ["$", "$"]],
    displayMath: [["\\[", "\\]"], ["$$", "$$"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: "tex2jax_ignore",
    processHtmlClass: "tex2jax_process|arithmatex",
  },
};
