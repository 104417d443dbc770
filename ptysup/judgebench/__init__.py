"""`ptysup judge-bench`: how good is the judge? Labelled turn ends replayed through the
run's own decision path (evidence, the checks' baseline, the tamper guard, the judge, a
second opinion), then scored.

cases reads and writes the case format (one JSON file per turn end) and finds the bundled
corpus (corpus/, recorded from the real pinned agents by scripts/record_judge_cases.py);
replay rebuilds a case's project and asks the decision path; score counts what came of
it; save makes a case of a run's own turn end (its run directory's turns/); command is
the subcommand. It may import the run, the store, the supervisor, agents and the shared
modules loose in ptysup/, never the command line, batch or the views.
"""
