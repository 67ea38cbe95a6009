#!/usr/bin/env bash
# The one test command of nodeops.rollout (make test runs it with no arguments).
#
#   scripts/test.sh                 every stage: sanity, units, lint, integration, molecule, reference
#   scripts/test.sh units lint      only the named stages
#   scripts/test.sh venv            only prepare .venv (and the pip bootstrap and collection layouts)
#
# From a fresh clone with nothing installed but Python 3.11 and git it:
#   1. creates .venv from requirements.txt + tests/requirements.txt (reused while their hash is unchanged);
#   2. writes the offline pip bootstrap ansible-test looks for in ~/.ansible/test/cache;
#   3. installs Debian's chromium when the integration stage runs and it is missing (apt-get, as root): the tests render
#      the HTML report in it headless;
#   4. copies the git-visible files to .build/ansible_collections/nodeops/rollout (ansible-test needs that path),
#      and links .build/collections/ansible_collections/nodeops/rollout to the working tree for ansible-lint,
#      pytest and molecule (exported as ANSIBLE_COLLECTIONS_PATH, with .venv/bin on PATH);
#   5. runs the stages in order, molecule beside integration when both run; a failing stage does not stop the next
#      ones (the reference stage builds the real Kubernetes control plane from Go modules first, once per pinned
#      version, into ~/.cache/nodeops-rollout);
#   6. prints a per-stage table and one last line "summary: N passed, M failed", counting individual tests
#      (pytest test cases, each sanity test, ansible-lint as one, each molecule scenario as one).
# It exits non-zero when anything failed or when no test ran at all.

set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2

PYTHON_VERSION=3.11
VENV="$ROOT/.venv"
BUILD="$ROOT/.build"
LAYOUT="$BUILD/ansible_collections/nodeops/rollout"
RUNTIME_COLLECTIONS="$BUILD/collections"
RESULTS="$BUILD/results"
REQUIREMENT_FILES=(requirements.txt tests/requirements.txt tests/constraints.txt)
ALL_STAGES=(sanity units lint integration molecule reference)

STAGE_NAMES=()
STAGE_PASSED=()
STAGE_FAILED=()
STAGE_SKIPPED=()
STAGE_SECONDS=()
STAGE_NOTES=()
REFERENCE_BUILD_PID=
BESIDE_PID=

say() { printf '%s\n' "$*"; }
die() { printf 'test.sh: %s\n' "$*" >&2; exit 2; }

header() {
    say ""
    say "================================================================================"
    say "== $*"
    say "================================================================================"
}

find_python() {
    local candidate
    for candidate in "${PYTHON:-}" "python$PYTHON_VERSION" python3; do
        [[ -n "$candidate" ]] || continue
        if command -v "$candidate" >/dev/null 2>&1 &&
            [[ "$("$candidate" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" == "$PYTHON_VERSION" ]]; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

requirements_hash() {
    {
        printf 'python %s\n' "$PYTHON_VERSION"
        cat "${REQUIREMENT_FILES[@]}"
    } | sha256sum | cut -d' ' -f1
}

# --- preparation ---------------------------------------------------------------------------------------------------

prepare_venv() {
    local wanted python
    wanted=$(requirements_hash)
    if [[ -x "$VENV/bin/python" && -f "$VENV/.requirements-hash" && "$(cat "$VENV/.requirements-hash")" == "$wanted" ]]; then
        say "Reusing $VENV (requirements unchanged)"
        return 0
    fi
    python=$(find_python) || die "Python $PYTHON_VERSION is required (set PYTHON=/path/to/python$PYTHON_VERSION)"
    say "Creating $VENV with $python and installing ${REQUIREMENT_FILES[*]}"
    rm -rf "$VENV"
    "$python" -m venv "$VENV" || die "cannot create $VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r requirements.txt -r tests/requirements.txt || die "pip install of the pinned requirements failed"
    printf '%s\n' "$wanted" >"$VENV/.requirements-hash"
}

# ansible-test bootstraps pip in every sanity virtualenv with a get-pip script it downloads from a host that is
# not reachable here; it uses ~/.ansible/test/cache/get_pip_<version>.py instead when that file exists.
prepare_pip_bootstrap() {
    local pip_version cache script wheel
    pip_version=$("$VENV/bin/python" - "$PYTHON_VERSION" <<'EOF'
import sys
import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version=sys.argv[1]))["pip"])
EOF
) || die "cannot read the pip version ansible-test wants"
    cache="$HOME/.ansible/test/cache"
    script="$cache/get_pip_${pip_version//./_}.py"
    wheel="$cache/pip-$pip_version-py3-none-any.whl"
    mkdir -p "$cache"
    if [[ ! -f "$wheel" ]]; then
        "$VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
            -d "$cache" "pip==$pip_version" || die "cannot download the pip $pip_version wheel"
    fi
    cat >"$script.tmp" <<EOF
"""Offline stand-in for get-pip.py $pip_version, written by nodeops.rollout's scripts/test.sh.

ansible-test runs it as: <python> get_pip --disable-pip-version-check pip==$pip_version --no-setuptools --no-wheel.
It installs pip from the wheel beside it instead of from a download.
"""
import os
import sys

WHEEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pip-$pip_version-py3-none-any.whl")
sys.path.insert(0, WHEEL)

from pip._internal.cli.main import main  # noqa: E402  (importable only once the wheel is on sys.path)

args = [WHEEL if arg == "pip==$pip_version" else arg for arg in sys.argv[1:] if arg not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--no-cache-dir"] + args))
EOF
    mv "$script.tmp" "$script"
}

# ansible-test needs the collection at .../ansible_collections/<namespace>/<name> and sees only the files git
# knows about: copy exactly those (tracked or untracked-but-not-ignored, and still present) into a fresh layout.
prepare_layout() {
    rm -rf "$LAYOUT"
    mkdir -p "$LAYOUT"
    git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' path; do
            if [[ -e "$path" || -L "$path" ]]; then printf '%s\0' "$path"; fi
        done |
        tar --null -T - -cf - | tar -xf - -C "$LAYOUT" || die "cannot copy the collection to $LAYOUT"
    # Mark the copy as its own git work tree (all files untracked) so ansible-test lists its files from the
    # copy and not from the enclosing repository, where .build/ is ignored.
    git -C "$LAYOUT" init --quiet || die "cannot initialise $LAYOUT"

    mkdir -p "$RUNTIME_COLLECTIONS/ansible_collections/nodeops"
    ln -sfn "$ROOT" "$RUNTIME_COLLECTIONS/ansible_collections/nodeops/rollout"
}

# The integration tests render the rollout's HTML report in headless chromium (tests/integration/browser.py). Debian's
# package is installed when missing and apt-get can; elsewhere the rendering check says why it cannot run.
prepare_browser() {
    if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
        return 0
    fi
    if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
        say "chromium is missing and cannot be installed here (needs apt-get as root): the report's rendering check will say so"
        return 0
    fi
    say "Installing chromium (apt-get) for the HTML report's rendering check"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >"$RESULTS/chromium-install.log" 2>&1 ||
        say "apt-get install chromium failed (see $RESULTS/chromium-install.log): the report's rendering check will say so"
}

# --- counting --------------------------------------------------------------------------------------------------------

# Print "passed failed skipped" for the test cases in the given junit XML files.
junit_counts() {
    "$VENV/bin/python" - "$@" <<'EOF'
import sys
import xml.etree.ElementTree as ET

passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        failed += 1
        continue
    for case in root.iter("testcase"):
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            failed += 1
        elif "skipped" in kinds:
            skipped += 1
        else:
            passed += 1
print(passed, failed, skipped)
EOF
}

record() {
    # record NAME PASSED FAILED SKIPPED SECONDS NOTE
    STAGE_NAMES+=("$1")
    STAGE_PASSED+=("$2")
    STAGE_FAILED+=("$3")
    STAGE_SKIPPED+=("$4")
    STAGE_SECONDS+=("$5")
    STAGE_NOTES+=("$6")
}

# record_junit NAME RC SECONDS FILES... : counts from junit; a failing command with no failed test counts as one failure.
record_junit() {
    local name=$1 rc=$2 seconds=$3 passed failed skipped note=""
    shift 3
    if (($# == 0)); then
        passed=0 failed=0 skipped=0
    else
        read -r passed failed skipped < <(junit_counts "$@")
    fi
    if ((rc != 0 && failed == 0)); then
        failed=1
        note="exit status $rc without a failed test case"
    fi
    record "$name" "$passed" "$failed" "$skipped" "$seconds" "$note"
}

# start_beside STAGE: run stage_STAGE in the background, its output kept in a log and its counts in a file;
# end_beside STAGE waits for it, prints the log under its own header and records the counts.
start_beside() {
    local name=$1
    say "Running the $name stage beside the next one (log $RESULTS/$name.log)"
    rm -f "$RESULTS/$name.counts"
    count_stage "$name" >"$RESULTS/$name.log" 2>&1 &
    BESIDE_PID=$!
}

# count_stage STAGE: run stage_STAGE (in the background job start_beside makes) and write the line it recorded to a file.
count_stage() {
    local name=$1 last
    "stage_$name"
    last=$((${#STAGE_NAMES[@]} - 1))
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "${STAGE_NAMES[last]}" "${STAGE_PASSED[last]}" "${STAGE_FAILED[last]}" \
        "${STAGE_SKIPPED[last]}" "${STAGE_SECONDS[last]}" "${STAGE_NOTES[last]}" >"$RESULTS/$name.counts"
}

end_beside() {
    local name=$1 counted_name passed failed skipped seconds note
    wait "$BESIDE_PID"
    cat "$RESULTS/$name.log"
    if IFS=$'\t' read -r counted_name passed failed skipped seconds note <"$RESULTS/$name.counts"; then
        record "$counted_name" "$passed" "$failed" "$skipped" "$seconds" "${note}${note:+; }ran beside integration"
    else
        record "$name" 0 1 0 0 "the $name stage ended without its counts (see $RESULTS/$name.log)"
    fi
}

# --- stages ------------------------------------------------------------------------------------------------------------

stage_sanity() {
    local start=$SECONDS rc ignore_problems=0 file
    header "sanity: ansible-test sanity --python $PYTHON_VERSION --requirements"
    rm -rf "$LAYOUT/tests/output"
    (cd "$LAYOUT" && env -u ANSIBLE_COLLECTIONS_PATH ansible-test sanity --python "$PYTHON_VERSION" --requirements --junit)
    rc=$?
    # The collection promises sanity without ignore entries: any non-comment line in an ignore file fails.
    for file in tests/sanity/ignore-*.txt; do
        [[ -f "$file" ]] || continue
        if grep -qvE '^[[:space:]]*(#|$)' "$file"; then
            say "ERROR: $file has ignore entries; fix the code instead:"
            grep -vE '^[[:space:]]*(#|$)' "$file"
            ignore_problems=1
        fi
    done
    shopt -s nullglob
    local files=("$LAYOUT"/tests/output/junit/ansible-test-sanity-*.xml)
    shopt -u nullglob
    record_junit sanity "$rc" $((SECONDS - start)) "${files[@]}"
    local last=$((${#STAGE_NAMES[@]} - 1))
    if ((ignore_problems)); then
        STAGE_FAILED[last]=$((STAGE_FAILED[last] + 1))
        STAGE_NOTES[last]="tests/sanity ignore entries present"
    else
        STAGE_PASSED[last]=$((STAGE_PASSED[last] + 1))
    fi
}

stage_units() {
    local start=$SECONDS rc
    header "units: ansible-test units --python $PYTHON_VERSION"
    rm -rf "$LAYOUT/tests/output/junit"
    (cd "$LAYOUT" && env -u ANSIBLE_COLLECTIONS_PATH ansible-test units --python "$PYTHON_VERSION")
    rc=$?
    shopt -s nullglob
    local files=("$LAYOUT"/tests/output/junit/python*-units.xml)
    shopt -u nullglob
    record_junit units "$rc" $((SECONDS - start)) "${files[@]}"
}

stage_lint() {
    local start=$SECONDS rc
    header "lint: ansible-lint (production profile, offline)"
    ansible-lint --offline --profile production
    rc=$?
    if ((rc == 0)); then
        record lint 1 0 0 $((SECONDS - start)) ""
    else
        record lint 0 1 0 $((SECONDS - start)) "ansible-lint exit status $rc"
    fi
}

stage_integration() {
    local start=$SECONDS rc
    header "integration: pytest tests/integration sandbox/tests (the sandbox's own tests)"
    if [[ ! -d tests/integration ]] || [[ -z "$(find tests/integration -name 'test_*.py' -o -name '*_test.py' | head -n 1)" ]]; then
        say "No integration tests (tests/integration/test_*.py); stage not run."
        record integration 0 0 0 0 "no tests yet"
        return
    fi
    if [[ -n "${BROWSER_PID:-}" ]]; then
        wait "$BROWSER_PID" || true
    fi
    rm -f "$RESULTS/integration.xml"
    # Three workers on two cores, whole files per worker: each file's sandboxes are module-scoped and some tests build
    # on the previous one; a worker keeps about half a core busy (the rest is waiting on simulated delays), so a third
    # worker shortens the stage by about a third without starving the others.
    # The fidelity table needs the reference control plane: the reference stage runs it.
    python -m pytest tests/integration sandbox/tests --ignore=sandbox/tests/test_fidelity.py -p no:cacheprovider \
        -n "${INTEGRATION_WORKERS:-3}" --dist loadfile --durations=30 --junitxml="$RESULTS/integration.xml"
    rc=$?
    if [[ -f "$RESULTS/integration.xml" ]]; then
        record_junit integration "$rc" $((SECONDS - start)) "$RESULTS/integration.xml"
    else
        record_junit integration "$rc" $((SECONDS - start))
    fi
}

stage_molecule() {
    local start=$SECONDS passed=0 failed=0 scenario scenarios=() failed_names=()
    header "molecule: every scenario under extensions/molecule/"
    if [[ -d extensions/molecule ]]; then
        while IFS= read -r scenario; do
            scenarios+=("$scenario")
        done < <(find extensions/molecule -name molecule.yml -printf '%h\n' | sed 's#^extensions/molecule/##' | sort)
    fi
    if ((${#scenarios[@]} == 0)); then
        say "No molecule scenarios (extensions/molecule/*/molecule.yml); stage not run."
        record molecule 0 0 0 0 "no scenarios yet"
        return
    fi
    local scenario_start
    for scenario in "${scenarios[@]}"; do
        say "--- molecule test -s $scenario"
        scenario_start=$SECONDS
        if molecule test -s "$scenario"; then
            passed=$((passed + 1))
            say "--- molecule scenario $scenario passed in $((SECONDS - scenario_start)) s"
        else
            failed=$((failed + 1))
            failed_names+=("$scenario")
            say "--- molecule scenario $scenario FAILED after $((SECONDS - scenario_start)) s"
        fi
    done
    record molecule "$passed" "$failed" 0 $((SECONDS - start)) "${failed_names[*]:+failed: ${failed_names[*]}}"
}

# --- main ----------------------------------------------------------------------------------------------------------------

stage_reference() {
    local start=$SECONDS rc built junit=() scenario_rc
    header "reference: the real kube-apiserver, controllers and scheduler (built on first use), the tests marked reference on it, the fidelity table"
    if ! command -v go >/dev/null; then
        record reference 0 1 0 $((SECONDS - start)) "no Go toolchain: the reference control plane is built with go"
        return
    fi
    if [[ -n "${REFERENCE_BUILD_PID:-}" ]]; then
        say "Waiting for the background build of the reference control plane:"
        wait "$REFERENCE_BUILD_PID"
        cat "$RESULTS/reference-build.log"
    fi
    # builds what the background build did not (or everything, when this stage runs alone); reuses what is there
    if ! python -m sandbox.reference.build; then
        record reference 0 1 0 $((SECONDS - start)) "building the reference control plane failed"
        return
    fi
    built=$((SECONDS - start))
    rm -f "$RESULTS/reference.xml"
    # the tests that hold on either backend, rerun with every sandbox on the real control plane; then the fidelity table
    # (sandbox/tests/test_fidelity.py), which runs one scenario on both backends and compares every answer
    NODEOPS_SANDBOX_KUBE=reference python -m pytest tests/integration sandbox/tests -m reference -p no:cacheprovider \
        -n "${REFERENCE_WORKERS:-2}" --dist loadfile --durations=30 --junitxml="$RESULTS/reference.xml"
    rc=$?
    [[ -f "$RESULTS/reference.xml" ]] && junit=("$RESULTS/reference.xml")
    record_junit reference "$rc" $((SECONDS - start)) "${junit[@]}"
    local last=$((${#STAGE_NAMES[@]} - 1))
    say "--- molecule test -s default on the reference backend"
    NODEOPS_SANDBOX_KUBE=reference molecule test -s default
    scenario_rc=$?
    if ((scenario_rc == 0)); then
        STAGE_PASSED[last]=$((STAGE_PASSED[last] + 1))
    else
        STAGE_FAILED[last]=$((STAGE_FAILED[last] + 1))
        STAGE_NOTES[last]="molecule default failed on the reference backend; "
    fi
    STAGE_SECONDS[last]=$((SECONDS - start))
    STAGE_NOTES[last]+="control plane ready in ${built}s"
}

main() {
    local stages=("$@") stage total_start=$SECONDS
    if ((${#stages[@]} == 0)); then
        stages=("${ALL_STAGES[@]}")
    fi
    for stage in "${stages[@]}"; do
        case "$stage" in
        sanity | units | lint | integration | molecule | reference | venv) ;;
        *) die "unknown stage '$stage': choose from ${ALL_STAGES[*]} venv" ;;
        esac
    done

    # Runs in the same tree share .venv and .build/: take turns instead of rebuilding them under each other.
    mkdir -p "$BUILD"
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$BUILD/.lock"
        if ! flock -n 9; then
            say "Another test run in this tree holds $BUILD/.lock; waiting for it to finish..."
            flock 9
        fi
    fi

    header "prepare: .venv, pip bootstrap for ansible-test, collection layouts"
    prepare_venv
    prepare_pip_bootstrap
    prepare_layout
    mkdir -p "$RESULTS"
    export PATH="$VENV/bin:$PATH"
    export ANSIBLE_COLLECTIONS_PATH="$RUNTIME_COLLECTIONS"
    say "PATH starts with $VENV/bin; ANSIBLE_COLLECTIONS_PATH=$ANSIBLE_COLLECTIONS_PATH"
    say "ansible-test layout: $LAYOUT"

    # chromium (for the report's rendering check) downloads while the stages before integration run
    if [[ " ${stages[*]} " == *" integration "* ]]; then
        prepare_browser &
        BROWSER_PID=$!
    fi

    if [[ "${stages[*]}" == "venv" ]]; then
        say "Environment ready."
        return 0
    fi

    # The reference control plane builds in the background (one compile job, niced) while the stages before it run,
    # so a fresh machine does not wait for it; stage_reference waits for what is still building. Alertmanager (the
    # alert gates' test) builds first and the Pushgateway is fetched, so that neither loads the machine while the
    # integration stage's workers start their sandboxes (a test that needs one waits for it on the build's lock).
    if [[ " ${stages[*]} " == *" reference "* ]] && [[ "${stages[0]}" != reference ]] && command -v go >/dev/null; then
        (NODEOPS_REFERENCE_BUILD_JOBS=1 nice -n 10 python -m sandbox.reference.build alertmanager
         nice -n 10 python -c "from sandbox.pushgateway import ensure; print('pushgateway in', ensure())"
         NODEOPS_REFERENCE_BUILD_JOBS=1 nice -n 10 python -m sandbox.reference.build) >"$RESULTS/reference-build.log" 2>&1 &
        REFERENCE_BUILD_PID=$!
        say "Building the reference control plane in the background (pid $REFERENCE_BUILD_PID, log $RESULTS/reference-build.log)"
    fi

    # Molecule runs beside integration when both are asked for: integration's workers leave part of the two cores
    # idle (they wait on simulated delays), and molecule's scenarios have sandboxes of their own.
    local beside=
    if [[ " ${stages[*]} " == *" integration "* ]] && [[ " ${stages[*]} " == *" molecule "* ]]; then
        beside=molecule
    fi
    for stage in "${stages[@]}"; do
        [[ "$stage" == venv || "$stage" == "$beside" ]] && continue
        if [[ "$stage" == integration && -n "$beside" ]]; then
            start_beside "$beside"
            stage_integration
            end_beside "$beside"
            continue
        fi
        "stage_$stage"
    done

    local i passed=0 failed=0 skipped=0
    header "results"
    printf '%-12s %8s %8s %8s %9s  %s\n' stage passed failed skipped seconds note
    for i in "${!STAGE_NAMES[@]}"; do
        printf '%-12s %8d %8d %8d %9d  %s\n' "${STAGE_NAMES[i]}" "${STAGE_PASSED[i]}" "${STAGE_FAILED[i]}" \
            "${STAGE_SKIPPED[i]}" "${STAGE_SECONDS[i]}" "${STAGE_NOTES[i]}"
        passed=$((passed + STAGE_PASSED[i]))
        failed=$((failed + STAGE_FAILED[i]))
        skipped=$((skipped + STAGE_SKIPPED[i]))
    done
    say "total time: $((SECONDS - total_start)) s; skipped (not counted below): $skipped"
    say "summary: $passed passed, $failed failed"
    if ((failed > 0 || passed == 0)); then
        return 1
    fi
    return 0
}

main "$@"
