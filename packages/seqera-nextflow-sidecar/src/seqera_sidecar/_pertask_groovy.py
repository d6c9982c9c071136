"""The Groovy of the per-task config: one shared closure that asks the sidecar, in a form
both of Nextflow's config parsers accept.

Written for the strict (v2) config syntax of ``modules/nf-lang`` (``ConfigParser.g4`` and
``config/control/VariableScopeVisitor.java``), which is a subset of what the classic
ConfigSlurper-based parser (v1) takes, so it reads the same under both:

- no ``import``, no function declarations, no top-level variables: everything lives in
  closures assigned to config options;
- no ``for``/``while``/``switch``, no ``++``, no spread, no typed declarations: ``each``,
  ``inject`` and ``def`` only;
- no call of an undeclared method on the implicit ``this`` (the strict parser reports
  "`f` is not defined"): a local closure is called as ``f.call(x)``;
- classes outside ``java.lang``/``java.net``/``java.util``/``groovy.*`` only through a
  constructor of their fully qualified name (``new groovy.json.JsonSlurper()``), never a
  static call on a qualified name.

Why ``ext``: a ``withName`` selector *replaces* the process's own directive
(``ProcessConfigBuilder.applyConfig``: labels, then names, with ``put``), and a directive
closure that reads its own directive (``task.memory`` inside ``memory``) recurses through
``TaskConfig.get``. So the closures never read ``task.cpus``/``memory``/``time``/``disk``;
the declared values travel in ``ext.seqeraDeclared`` (an ``ext`` entry is merged key by
key, never replacing the user's ``ext.args``), and the one call per task lives in
``ext.seqeraSidecar``, which ``LazyMap`` evaluates with the task's context each time a
directive closure reads it. ``ext`` entries are hashed only when the script names them
(``TaskHasher.getTaskExtensionDirectiveVars``), so ``-resume`` is not affected.

Answers are kept JVM-wide (in ``System.getProperties()``, the one mutable map every
closure can reach without a top-level variable) by what was asked: process, attempt,
declared values, input bytes and the previous exit status. Without an input size every
task of a process at one attempt shares one call; with one, a task makes one call for
all of its directives. After a failure no call is made for ``SEQERA_SIDECAR_BACKOFF_MS``
and every task gets its declared values.
"""

from __future__ import annotations

from importlib.resources import files

__all__ = ["SHARED"]


# The closure itself, in pertask.groovy beside this module; its first two lines are comments
# for whoever opens that file.
SHARED = "\n".join(files(__package__).joinpath("pertask.groovy").read_text().splitlines()[2:])
