"""The interactive kinds' graph (``edit``): the inline apply (and design-sync's distillation), the
scope, the checks, the cold reads and the editor's fixes, then the shared finish."""
