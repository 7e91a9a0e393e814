"""What the tools tell the model that calls them, kept apart from the server to be reviewed as the model reads it."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from agentreview.model.record import record

INSTRUCTIONS = (
    "agentreview runs the repository's REVIEW.md review (command lanes and reviewer-agent lanes) over a git "
    "range and records a signed attestation with a verdict: pass, block or incomplete. After changing code, "
    "call review_run with cwd set to the repository and read the verdict and each lane's findings. Use "
    "wait=false to keep working and review_status to check on it; review_ledger lists past reviews."
)


@record
class ToolText:
    """What a host shows of one tool and may assume about it. ``description``'s first sentence says when to
    call it (a host that defers tools shows only that line); the hints (``ToolAnnotations``) gate approvals."""

    title: str
    description: str
    read_only: bool
    idempotent: bool
    open_world: bool = False
    destructive: bool = False


REVIEW_RUN = ToolText(
    title="Run the review",
    description=(
        "Call after changing code and before saying the work is done: reviews the git range base..head of the "
        "repository at cwd with every lane of its REVIEW.md and records a signed verdict (pass, block or "
        "incomplete). The lanes are shell command checks and reviewer-agent checks. With wait=true (default) "
        "the call returns when the review ends (minutes, when reviewer agents run): {runId, status: "
        "done|failed|cancelled, verdict: pass|block|incomplete, lanes: [{id, status}], attestation: {lanes: [{id, "
        "status, findings: [{severity, file, line, title, detail}]}], ...}}. pass: every blocking lane passed. "
        "block: a blocking lane found problems; read its findings and fix them. incomplete: a lane could not "
        "finish (timeout, skipped); not a pass. failed: the review could not run; 'error' says why. With "
        "wait=false it returns at once with {runId, status: 'running'}: keep working and call review_status with "
        "the runId. A verdict recorded earlier for the same range and manifest is answered from the ledger "
        "(cached: true). While it waits, the first progress notification carries the runId; cancelling the call "
        "cancels the review unless detach=true."
    ),
    # It adds a run and a ledger entry, never removes one; each call may run the lanes again.
    read_only=False,
    idempotent=False,
)
REVIEW_STATUS = ToolText(
    title="Review status",
    description=(
        "Call to check on a review by its runId (one review_run started with wait=false, or whose call was cut "
        "off): answers its status and, once done, its verdict and findings. Returns the run's view {runId, "
        "status: running|done|failed|cancelled, lanes: [{id, status}], binding, range: {base, head}}; once done "
        "also its verdict (pass|block|incomplete) and attestation with each lane's findings. Poll every few "
        "seconds while status is 'running'. An unknown runId is an error."
    ),
    read_only=True,
    idempotent=True,
)
REVIEW_CANCEL = ToolText(
    title="Cancel a review",
    description=(
        "Call to stop a running review you no longer need, by its runId: its lanes are killed and nothing is "
        "recorded. Running lanes and reviewer sessions are killed and unstarted lanes never start. Returns "
        "{runId, cancelled: true|false, status}: status 'not_found' for an unknown runId, cancelled=false when "
        "the review had already finished."
    ),
    # Stopping a review the caller started removes nothing recorded; a second cancel changes nothing.
    read_only=False,
    idempotent=True,
)
REVIEW_LEDGER = ToolText(
    title="List recorded reviews",
    description=(
        "Call to find earlier reviews of a repository or range (their verdicts, runIds and rangeShas), before "
        "running a review again or to pick one to export. Lists this host's recorded reviews (attestations), "
        "newest first: {total, attestations: [{runId, reviewId, binding, verdict, repoRemote, baseSha, headSha, "
        "rangeSha, createdAt, signed, lanes: [{id, status, blocking}], ...}]}. With includeRunning, reviews "
        "still running come first (status 'running')."
    ),
    read_only=True,
    idempotent=True,
)
REVIEW_EXPORT = ToolText(
    title="Export a review for CI",
    description=(
        "Call when a review passed and the change is about to be committed: writes the review's attestation as "
        "the export file a CI gate (agentreview verify) reads. By default it goes into the manifest's "
        "verdict.exportDir as <reviewId>-<binding>-<head12>.json. Name the review by runId, or by repoRemote + "
        "rangeSha (both from review_ledger), with binding when several bindings match. Returns {path, runId, "
        "verdict}. Commit the file with the change."
    ),
    # It writes one export file (the same bytes again for the same review), nothing else.
    read_only=False,
    idempotent=True,
)
REVIEW_PR = ToolText(
    title="Link a review to its pull request",
    description=(
        "Call to link a recorded review to its GitHub pull request and read the PR's state and check runs "
        "(this asks GitHub). The review is picked by runId, else rangeSha or range, else the PR already linked, "
        "else the newest review of cwd's HEAD. Appends a status snapshot to the review's annotations (never to "
        "the attestation). Returns {ok, attestation, pr, linkedVia, status, snapshots}, or {ok: false, error: "
        "{code, message}} with code gh_unavailable, gh_failed, unsupported_remote or no_pr."
    ),
    # Each call appends a snapshot of what GitHub says now.
    read_only=False,
    idempotent=False,
    open_world=True,
)

REVIEW_PRESETS = ToolText(
    title="List reviewer presets",
    description=(
        "Call to see which reviewer presets agent lanes can name and whether each can run on this host: "
        "{total, presets: [{name, provider, model, source: builtin|user, installed, usable, version, detail}]}. "
        "detail says why a preset is not usable (CLI missing, too old, a flag it needs absent). With probe=true "
        "each preset's CLI is also started as a lane would start it, against a local server that refuses every "
        "request (no paid model call), and probe says 'usable', 'would fall back: <why>', 'would stop: <why>' or "
        "'missing: <fix>'. Useful before review_run, or when an agent lane was skipped or fell back."
    ),
    # It reads the host's presets and CLIs; a probe starts a CLI against a local server, changing nothing.
    read_only=True,
    idempotent=True,
)

def arg(text: str) -> Any:
    """One argument's description, as the tool's input schema shows it."""
    return Field(description=text)


CWD_RUN = arg("Absolute path of the repository to review (any directory inside it), inside the client's roots.")
MANIFEST = arg("REVIEW.md to use, absolute or relative to cwd (default: the repository root's).")
BINDING_RUN = arg("Which binding (set of lanes) of REVIEW.md to run; default: the only one, else 'default'.")
BASE = arg("Base ref or sha of the range (default: the merge-base with the manifest's target.base).")
HEAD = arg(
    "Head ref or sha (default: HEAD; uncommitted changes are reviewed and the review marked dirty). "
    "A head the checkout does not hold is reviewed in a temporary worktree of it."
)
NOCACHE = arg("Run every lane again instead of answering from a recorded verdict (implies compose=false).")
COMPOSE = arg("Let agent lanes review only the delta since a prior passing review of this line of work.")
WAIT = arg("true: return the finished review; false: return {runId, status: 'running'} at once.")
REQUESTER = arg("Your session id, recorded as the review's requester (review_ledger can filter by it).")
DETACH = arg(
    "With wait=true: keep the review running when this call is cancelled or the client disconnects "
    "(default false: the review is cancelled with its call and nothing is recorded)."
)
PR = arg("The pull request known at review time: {provider: 'github', repo: 'owner/name', number, url}.")
SUPERSEDE = arg("Cancel older running reviews of this same line of work (same base and binding).")
RUN_ID = arg("The runId review_run returned (review-<uuid>).")
CWD_LEDGER = arg("Absolute path of a repository: only its reviews; refs in range are resolved there.")
REPO_REMOTE = arg("A repository's remote URL or identity (e.g. github.com/owner/name).")
RANGE = arg("BASE..HEAD (refs need cwd; two 40-hex shas do not) or a 64-hex rangeSha.")
BINDING_FILTER = arg("Only reviews of this binding.")
REQUESTER_FILTER = arg("Only reviews requested by this session id.")
SUBTREE = arg(
    "With requesterSessionId: also the reviews of the sessions under it (session ids '<id>/...'), "
    "as the reference host's session tree."
)
INCLUDE_RUNNING = arg("Also list reviews still running, first (newest first).")
LIMIT = Field(ge=1, le=500, description="At most this many rows (1-500).")
EXPORT_RUN_ID = arg("The review to export (a runId from review_run or review_ledger).")
RANGE_SHA = arg("With repoRemote: the 64-hex rangeSha of the review (from review_ledger).")
BINDING_EXPORT = arg("Which binding, when several reviews of the range match.")
OUT_PATH = arg(
    "Write the file here instead (a relative path: against cwd, else the repository root); it must lie inside "
    "the repository's export folder or the client's roots, with no '..' and no link on the way."
)
CWD_EXPORT = arg("Absolute path that a relative outPath is resolved against.")
PR_RUN_ID = arg("The review to link (a runId).")
PR_RANGE_SHA = arg("The review's 64-hex rangeSha (from review_ledger).")
PR_RANGE = arg("The review's range: BASE..HEAD (refs need cwd) or a 64-hex rangeSha.")
PR_CWD = arg("Absolute path of the repository; alone, the newest review of its HEAD is linked.")
PR_URL = arg("The pull request's URL (https://github.com/owner/name/pull/N), when it is not found by head.")
PROBE = arg("Also start each preset's CLI against a local server that refuses every request (slower; no model call).")
