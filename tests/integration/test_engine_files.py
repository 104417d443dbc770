"""The GitHub Action, the reusable workflow and the Kubernetes base, validated offline.

Schemas (check-jsonschema's vendored GitHub schemas, kubernetes-validate), linters (zizmor
--offline, actionlint) and `kubectl kustomize` all come with scripts/setup.sh; a missing one
fails these tests instead of skipping them. Then what no schema knows: the retry policy is
ptysup's own exit codes, inputs reach shells only through `env:`, every action is pinned.
"""

from __future__ import annotations

import io
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ptysup.batch import command, taskrun
from ptysup.exitcodes import ExitCode
from ptysup.terminal.signals import STOP_SIGNALS
from ptysup.testing.lint_tools import actionlint

pytestmark = pytest.mark.engines

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
WORKFLOW = ROOT / ".github" / "workflows" / "ptysup-batch.yml"
K8S = ROOT / "deploy" / "k8s"
BIN = Path(sys.executable).parent
SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def tool(name: str) -> str:
    """A validator from the venv (scripts/setup.sh installs it): fails, never skips."""
    path = BIN / name
    assert path.exists(), f"{name} is missing from the venv: run scripts/setup.sh"
    return str(path)


def run(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=180)


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def steps(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every step of an action or a workflow."""
    if "runs" in doc:
        yield from doc["runs"]["steps"]
    for job in doc.get("jobs", {}).values():
        yield from job.get("steps", [])


# -- schemas and linters -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "path"),
    [("vendor.github-actions", ACTION), ("vendor.github-workflows", WORKFLOW)],
)
def test_github_files_match_githubs_schemas(schema: str, path: Path) -> None:
    done = run(tool("check-jsonschema"), "--builtin-schema", schema, str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_schema_check_rejects_a_broken_action(tmp_path: Path) -> None:
    broken = tmp_path / "action.yml"
    broken.write_text("name: x\ndescription: y\nruns:\n  using: composite\n  stepz: []\n")
    done = run(tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(broken))
    assert done.returncode != 0


def test_zizmor_finds_nothing_offline() -> None:
    done = run(tool("zizmor"), "--offline", str(ACTION), str(WORKFLOW))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr


def test_zizmor_would_see_a_template_injection(tmp_path: Path) -> None:
    bad = tmp_path / "action.yml"
    text = ACTION.read_text(encoding="utf-8")
    bad.write_text(text.replace("printf '%s' \"$INPUT_TASK\"", "printf '%s' '${{ inputs.task }}'"))
    assert bad.read_text() != text
    done = run(tool("zizmor"), "--offline", str(bad))
    assert done.returncode != 0
    assert "template-injection" in done.stdout + done.stderr


def test_actionlint_finds_nothing() -> None:
    assert actionlint([WORKFLOW]) == []


def test_actionlint_sees_an_untrusted_expression(tmp_path: Path) -> None:
    bad = tmp_path / "ptysup-batch.yml"
    text = WORKFLOW.read_text(encoding="utf-8")
    bad.write_text(text.replace('"$TASKS"', '"${{ github.event.pull_request.title }}"'))
    found = actionlint([bad])
    assert any("untrusted" in f["message"] for f in found), found


def kustomize(path: Path) -> list[dict[str, Any]]:
    done = run(tool("kubectl"), "kustomize", str(path))
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def kubernetes_validate(
    docs: list[dict[str, Any]], tmp_path: Path, version: str | None = None
) -> subprocess.CompletedProcess[str]:
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text(yaml.safe_dump_all(docs))
    release = ["-k", version] if version else []
    return run(tool("kubernetes-validate"), "--strict", *release, str(rendered))


def k8s_versions() -> list[str]:
    """Every Kubernetes release from 1.29 that kubernetes-validate knows."""
    from ptysup.testing.k8s_versions import known_from

    found = known_from("1.29")
    assert "1.29.0" in found and "1.34.0" in found, found
    return found


@pytest.mark.parametrize("version", k8s_versions())
def test_the_kustomize_base_renders_and_validates(tmp_path: Path, version: str) -> None:
    docs = kustomize(K8S)
    assert sorted(d["kind"] for d in docs) == ["ConfigMap", "Job"]
    done = kubernetes_validate(docs, tmp_path, version)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_base_job_is_sized_by_the_generator_from_its_tasks() -> None:
    out = io.StringIO()
    assert command.plan_main([str(K8S / "TASKS.yaml"), "--format", "k8s"], out, {}) == 0
    assert (K8S / "job-size.yaml").read_text() == out.getvalue()
    raw = next(d for d in yaml.safe_load_all((K8S / "job.yaml").read_text()) if d)
    assert "completions" not in raw["spec"] and "parallelism" not in raw["spec"]
    spec = the_job()["spec"]
    assert (spec["completions"], spec["parallelism"]) == (1, 1)


def test_the_generator_sizes_a_job_from_jobs_and_the_tasks(tmp_path: Path) -> None:
    tasks = tmp_path / "TASKS.yaml"
    tasks.write_text(
        "jobs: 2\ntasks:\n" + "".join(f"  - {{id: t{i}, task: x}}\n" for i in range(5))
    )
    out = io.StringIO()
    assert command.plan_main([str(tasks), "--format", "k8s"], out, {}) == 0
    patch = yaml.safe_load(out.getvalue())
    assert patch["metadata"]["name"] == the_job()["metadata"]["name"]
    assert patch["spec"] == {"completions": 5, "parallelism": 2}


def test_kubernetes_validate_rejects_a_misspelt_job(tmp_path: Path) -> None:
    docs = kustomize(K8S)
    job = next(d for d in docs if d["kind"] == "Job")
    job["spec"]["backoffLimitPerIndx"] = job["spec"].pop("backoffLimitPerIndex")
    assert kubernetes_validate(docs, tmp_path).returncode != 0


def test_the_kubernetes_validator_sees_the_status_missing_before_1_35(tmp_path: Path) -> None:
    docs = kustomize(K8S)
    job = next(d for d in docs if d["kind"] == "Job")
    del job["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"]
    assert kubernetes_validate(docs, tmp_path, "1.33.0").returncode != 0


def test_the_docs_overlay_built_as_a_person_builds_it_validates_on_every_release(
    tmp_path: Path,
) -> None:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    shutil.copytree(K8S, tmp_path / "ptysup-base")
    for name in ("kustomization.yaml", "state.yaml"):
        (overlay / name).write_text(docs_block(name))
    (overlay / "TASKS.yaml").write_text("tasks:\n  - id: a\n    task: A\n  - id: b\n    task: B\n")
    (overlay / "anthropic.env").write_text("ANTHROPIC_API_KEY=sk-ant-example\n")
    (overlay / "git.env").write_text("PTYSUP_GIT_TOKEN=example-token\n")
    # The docs' own commands, as a person types them in the overlay's folder.
    commands = docs_block("sh", lang="sh", first="ptysup batch plan").splitlines()
    assert commands[0] == "ptysup batch plan TASKS.yaml --format k8s > job-size.yaml"
    made = subprocess.run(
        [sys.executable, "-m", "ptysup", "batch", "plan", "TASKS.yaml", "--format", "k8s"],
        cwd=overlay,
        capture_output=True,
        text=True,
        check=True,
    )
    (overlay / "job-size.yaml").write_text(made.stdout)
    docs = kustomize(overlay)
    for version in k8s_versions():
        done = kubernetes_validate(docs, tmp_path, version)
        assert done.returncode == 0, (version, done.stdout + done.stderr)
    by_kind = {d["kind"]: d for d in docs if d["kind"] != "Secret"}
    secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
    job, tasks, claim = by_kind["Job"], by_kind["ConfigMap"], by_kind["PersistentVolumeClaim"]
    assert "id: b" in tasks["data"]["TASKS.yaml"]
    assert (job["spec"]["completions"], job["spec"]["parallelism"]) == (2, 2)
    pod = job["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["image"] == "registry.example/ptysup:0.1.0"
    assert container["env"][0] == {
        "name": "PTYSUP_REPOSITORY",
        "value": "https://git.example/team/project.git",
    }
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["tasks"]["configMap"]["name"] == tasks["metadata"]["name"]
    assert volumes["state"]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    refs = {
        e["name"]: e["valueFrom"]["secretKeyRef"]
        for e in container["env"]
        if "secretKeyRef" in e.get("valueFrom", {})
    }
    for env_name, ref in refs.items():
        assert ref["name"] in secrets and env_name == ref["key"], (env_name, ref)
    assert set(refs) == {"ANTHROPIC_API_KEY", "PTYSUP_GIT_TOKEN"}


def docs_block(marker: str, lang: str = "ya?ml", first: str | None = None) -> str:
    """The code block of the docs' scaling-out page whose first line names MARKER (or,
    given `first`, starts with it)."""
    section = (ROOT / "docs" / "scaling-out.md").read_text(encoding="utf-8")
    for block in re.findall(rf"```{lang}\n(.*?)```", section, re.S):
        head = block.splitlines()[0].strip()
        if head == f"# {marker}" or (first is not None and head.startswith(first)):
            return str(block)
    raise AssertionError(f"no ```{lang} block starting with '# {marker}' in docs/scaling-out.md")


def shell_scripts() -> list[tuple[str, str, str]]:
    """(where, shell, script) for every shell step of the engine files."""
    found = [
        (f"{path.name}: {s.get('name') or s.get('id') or s['run'][:30]}", "bash", s["run"])
        for path in (ACTION, WORKFLOW)
        for s in steps(load(path))
        if "run" in s
    ]
    container = the_job()["spec"]["template"]["spec"]["containers"][0]
    return [*found, ("job.yaml", "sh", container["args"][0])]


def shellcheck(shell: str, script: str) -> subprocess.CompletedProcess[str]:
    found = shutil.which("shellcheck")
    assert found, "shellcheck is missing: run scripts/setup.sh (apt-get install shellcheck)"
    argv = [found, "--shell", shell, "--severity", "style", "-"]
    return subprocess.run(argv, input=script, capture_output=True, text=True, timeout=60)


def test_every_shell_step_passes_shellcheck() -> None:
    scripts = shell_scripts()
    assert len(scripts) >= 6
    for where, shell, script in scripts:
        done = shellcheck(shell, script)
        assert done.returncode == 0, f"{where}:\n{done.stdout}"


def test_shellcheck_sees_an_unquoted_input() -> None:
    done = shellcheck("bash", "exec ptysup --task-file $INPUT_TASK_FILE\n")
    assert "SC2086" in done.stdout


# -- what no schema knows ------------------------------------------------------------------


def the_job() -> dict[str, Any]:
    return next(d for d in kustomize(K8S) if d["kind"] == "Job")


def test_the_job_retries_only_api_errors_signals_a_killed_agent_and_a_failed_push() -> None:
    spec = the_job()["spec"]
    rules = spec["podFailurePolicy"]["rules"]
    assert [r["action"] for r in rules] == ["Ignore", "Count", "FailIndex"]
    assert rules[0]["onPodConditions"] == [{"type": "DisruptionTarget", "status": "True"}]
    retried = {ExitCode.API_ERROR, *(ExitCode.for_signal(s) for s in STOP_SIGNALS)}
    retried.add(ExitCode.for_signal(signal.SIGKILL))  # the kubelet's kill, an OOM kill
    assert ExitCode.for_signal(signal.SIGKILL) == taskrun.AGENT_KILLED  # the agent's OOM kill
    retried.add(taskrun.PUSH_FAILED)
    assert rules[1]["onExitCodes"]["operator"] == "In"
    assert set(rules[1]["onExitCodes"]["values"]) == retried
    assert rules[2]["onExitCodes"] == {
        "containerName": "ptysup",
        "operator": "NotIn",
        "values": [0],
    }
    # Every other exit code of ptysup fails its index at once.
    for code in ExitCode:
        if code not in (ExitCode.COMPLETE, ExitCode.API_ERROR):
            assert code not in retried
    container = spec["template"]["spec"]["containers"][0]
    assert all(
        r.get("onExitCodes", {}).get("containerName", "ptysup") == container["name"] for r in rules
    )
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert spec["completionMode"] == "Indexed"
    assert spec["backoffLimitPerIndex"] >= 1


def test_each_pod_runs_its_index_on_the_state_volume_as_a_non_root_user() -> None:
    spec = the_job()["spec"]
    pod = spec["template"]["spec"]
    container = pod["containers"][0]
    script = container["args"][0]
    assert 'exec ptysup batch run /tasks/TASKS.yaml --index "$JOB_COMPLETION_INDEX"' in script
    assert '--runs-dir "$here/runs" --push "$PTYSUP_REPOSITORY"' in script
    # The git token is the clone's and ptysup's own: no global credential helper (the
    # agent's git would ask it), and ptysup is the container's first process, which ends
    # whatever the agent left running before it pushes (no shared process namespace).
    assert "--global" not in script and "GIT_CONFIG_GLOBAL=/dev/null git" in script
    assert not pod.get("shareProcessNamespace")
    assert 'here="/state/$PTYSUP_JOB_UID/$JOB_COMPLETION_INDEX"' in script
    assert {"name": "tasks", "mountPath": "/tasks", "readOnly": True} in container["volumeMounts"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    writable = {m["mountPath"] for m in container["volumeMounts"] if not m.get("readOnly")}
    assert writable == {"/state", "/tmp"}
    state = next(v for v in pod["volumes"] if v["name"] == "state")
    assert "persistentVolumeClaim" in state  # not an emptyDir: it outlives the pod
    env = {e["name"]: e for e in container["env"]}
    uid = env["PTYSUP_JOB_UID"]["valueFrom"]["fieldRef"]["fieldPath"]
    assert uid == "metadata.labels['batch.kubernetes.io/controller-uid']"
    # Default budgets for every task, and a deadline for the whole Job.
    assert env["PTYSUP_MAX_TIME"]["value"] == "1h" and env["PTYSUP_MAX_COST"]["value"] == "5"
    assert spec["activeDeadlineSeconds"] >= 3600
    memory = container["resources"]["requests"]["memory"]
    limit = container["resources"]["limits"]["memory"]
    assert memory.endswith("Mi") and limit.endswith("Mi")
    assert 451 < int(memory[:-2]) < int(limit[:-2])  # above the idle run (451 MB)


def test_the_action_and_the_workflow_hand_the_agent_no_token_but_the_model_s_key() -> None:
    # The agent and its supervisor get the run step's environment: the model's key, which
    # both need, and nothing else secret; checkouts keep no credentials (checked above).
    for path in (ACTION, WORKFLOW):
        text = path.read_text()
        assert not re.search(r"token", text, re.I), path
        assert re.findall(r"secrets\.\w+", text) == (
            ["secrets.ANTHROPIC_API_KEY"] if path == WORKFLOW else []
        )
    run = next(s for s in steps(load(ACTION)) if s.get("id") == "run")
    assert [k for k in run["env"] if not k.startswith("INPUT_")] == ["ANTHROPIC_API_KEY"]


def run_scripts(doc: dict[str, Any]) -> list[str]:
    return [s["run"] for s in steps(doc) if "run" in s]


@pytest.mark.parametrize("path", [ACTION, WORKFLOW])
def test_no_expression_is_interpolated_into_a_script(path: Path) -> None:
    scripts = run_scripts(load(path))
    assert scripts
    for script in scripts:
        assert "${{" not in script, script


def test_every_input_reaches_the_action_through_env_or_with() -> None:
    doc = load(ACTION)
    used = set()
    for step in steps(doc):
        for block in ("env", "with"):
            for value in (step.get(block) or {}).values():
                used |= set(re.findall(r"inputs\.([\w-]+)", str(value)))
        for key in ("if", "working-directory"):
            used |= set(re.findall(r"inputs\.([\w-]+)", str(step.get(key, ""))))
    assert used == set(doc["inputs"])


@pytest.mark.parametrize("path", [ACTION, WORKFLOW])
def test_every_action_is_pinned_by_full_sha_with_its_version(path: Path) -> None:
    uses = [s["uses"] for s in steps(load(path)) if "uses" in s]
    assert uses
    lines = path.read_text(encoding="utf-8").splitlines()
    for use in uses:
        if use.startswith("./"):
            continue
        assert SHA_PIN.match(use), use
        line = next(x for x in lines if use in x)
        assert re.search(r"# v\d+\.\d+\.\d+$", line), line


def test_the_action_execs_ptysup_and_uploads_a_visible_copy() -> None:
    by_id = {s.get("id"): s for s in steps(load(ACTION))}
    script = by_id["run"]["run"]
    assert re.findall(r"^\s*exec ptysup .*$", script, re.M)
    assert not re.search(r"^\s*ptysup ", script, re.M), "ptysup must replace the shell"
    upload = next(s for s in steps(load(ACTION)) if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == "${{ steps.collect.outputs.run-dir }}"
    assert upload["with"]["name"] == "${{ steps.collect.outputs.artifact-name }}"
    assert "always()" in by_id["collect"]["if"] and "always()" in upload["if"]


def test_the_workflow_plans_a_matrix_of_ids_and_summarises_always() -> None:
    doc = load(WORKFLOW)
    assert doc["permissions"] == {}
    jobs = doc["jobs"]
    plan_script = next(s["run"] for s in jobs["plan"]["steps"] if s.get("id") == "plan")
    assert '"$PTYSUP" batch plan "$TASKS" --format github-matrix' in plan_script
    batches = (ROOT / "docs" / "plans-and-batches.md").read_text()
    assert "ptysup batch plan TASKS.yaml --format github-matrix" in batches
    assert jobs["run"]["if"] == "needs.plan.outputs.count != '0'"  # no empty matrix
    strategy = jobs["run"]["strategy"]
    assert strategy["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert strategy["max-parallel"] == "${{ inputs.max-parallel }}"
    action = next(s for s in jobs["run"]["steps"] if s.get("uses") == "./ptysup")
    assert action["with"]["batch-id"] == "${{ matrix.id }}"
    assert jobs["summary"]["if"] == "always()"
    for job in jobs.values():
        assert set(job["permissions"]) <= {"contents"}
        for step in job["steps"]:
            if "actions/checkout@" in step.get("uses", ""):
                assert step["with"]["persist-credentials"] is False
