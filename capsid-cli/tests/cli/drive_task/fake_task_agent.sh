#!/bin/sh
# A fake agent for `capsid drive --task`: it reads the task body on stdin, records what it
# saw in $TASK_LOG (its environment, whether the driver's hooks are installed, the body), runs
# $SECOND_DRIVER (another session's `capsid drive --task`) while this session holds the lease,
# and commits one change; with TASK_BREAK set it breaks the project's tests instead.
set -u
input=$(cat)
printf '%s' "$input" > "$TASK_LOG.stdin"
hooks=no
grep -q "hook pre-tool-use" .claude/settings.json 2>/dev/null && hooks=yes
printf 'agent=%s ns=%s task=%s run=%s job=%s hooks=%s cwd=%s\n' "$CAPSID_AGENT" "$CAPSID_NAMESPACE" \
  "$CAPSID_TASK_PATH" "$CAPSID_RUN_ID" "${CAPSID_JOB_ID:-none}" "$hooks" "$(pwd)" >> "$TASK_LOG"
if [ -n "${SECOND_DRIVER:-}" ]; then
  env -u SECOND_DRIVER sh -c "$SECOND_DRIVER" > "$TASK_LOG.b.out" 2> "$TASK_LOG.b.err"
  echo $? > "$TASK_LOG.b.rc"
fi
if [ -n "${TASK_BREAK:-}" ]; then
  echo broken > state.txt
  git add state.txt && git commit -qm "Break the widgets"
else
  echo better > improvement.txt
  git add improvement.txt && git commit -qm "An improvement"
fi
printf '{"type":"result","subtype":"success","session_id":"sess-task","is_error":false,"result":"One attempt.","total_cost_usd":0.1,"num_turns":3}\n'
