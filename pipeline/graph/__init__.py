"""The two kinds of run as LangGraph graphs: ``create/`` (phase1-creation, phase4-creation) and
``edit/`` (the interactive kinds), with what they share at this level: the state base
(``state``), the run's dependencies (``deps``), the one finish (``finish``, ``diff``, ``story``,
``withhold``) and the runner that picks the graph for a run's kind (``runner``, ``result``)."""
