#!/bin/sh
# A fake Claude Code for the drive tests that the real CLI cannot express (the approval round
# trips against a fake GitHub, dispatch bounds, a session that runs none of the hooks or
# rewires the worktree's git hooks). Like `claude -p --output-format stream-json`, it
# reads its prompt (the job body) on stdin, works in its current folder (the job's worktree),
# runs the hooks the driver passes with `--settings` (as Claude Code reads them) with Claude
# Code's hook event JSON, and prints stream-json ending in a result line.
# `--resume <session>` continues a session with the answer on stdin. What it does is chosen
# by a MODE= word in the job body. Each step is appended to $FAKE_LOG for the test to read.
set -u
log() { printf '%s\n' "$*" >> "$FAKE_LOG"; }
settings=.claude/settings.json
resume=
while [ $# -gt 0 ]; do
  case "$1" in
    --settings) settings=$2; shift 2 ;;
    --resume) resume=$2; shift 2 ;;
    *) shift ;;
  esac
done
hook() {
  cmd=$(grep -o "\"command\": \"[^\"]* hook $1\"" "$settings" | head -n 1 | sed 's/^"command": "//; s/"$//')
  if [ -z "$cmd" ]; then log "no $1 hook installed"; exit 97; fi
  printf '%s' "$2" | sh -c "$cmd"
}
stop_event() {
  printf '{"session_id":"%s","transcript_path":"/tmp/t.jsonl","cwd":"%s","permission_mode":"default","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Done."}' "$1" "$(pwd)"
}
input=$(cat)

if [ -n "$resume" ]; then
  session=$resume
  log "resume session=$session cwd=$(pwd) input=$input"
  printf '%s\n' "$input" > answer.txt
  git add answer.txt && git commit -qm "Use the answer"
  log "stop: $(hook stop "$(stop_event "$session")")"
  printf '{"type":"result","subtype":"success","session_id":"%s","is_error":false,"result":"Applied the answer.","total_cost_usd":0.05,"num_turns":2}\n' "$session"
  exit 0
fi

session="sess-$CAPSID_JOB_ID"
log "start job=$CAPSID_JOB_ID ns=$CAPSID_NAMESPACE cwd=$(pwd) worktree=$CAPSID_WORKTREE"
if [ -n "${TMUX:-}" ]; then log "tmux session=$(tmux display-message -p '#S')"; fi
printf '{"type":"system","subtype":"init","session_id":"%s","cwd":"%s"}\n' "$session" "$(pwd)"
denials=""
case "$input" in
  *MODE=pass*)
    mkdir -p tests
    echo 'widgets: 2' > widgets.txt
    printf 'def test_widgets():\n    assert True\n' > tests/test_widgets.py
    git add widgets.txt tests && git commit -qm "Widgets in two sizes"
    branch=$(git symbolic-ref --short HEAD)
    out=$(hook pre-tool-use "$(printf '{"session_id":"%s","transcript_path":"/tmp/t.jsonl","cwd":"%s","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push origin %s","description":"Push","timeout":120000,"run_in_background":false},"tool_use_id":"toolu_push"}' "$session" "$(pwd)" "$branch")")
    log "pre-tool-use: $out"
    [ -z "$out" ] && git push -q origin "$branch" 2>>"$FAKE_LOG"
    ;;
  *MODE=nohooks*)
    # An agent command that loads none of the driver's hooks (a setting switched them off).
    echo 'widgets: 2' > widgets.txt
    git add widgets.txt && git commit -qm "Widgets without hooks"
    log "no hooks run"
    printf '{"type":"result","subtype":"success","session_id":"%s","is_error":false,"result":"Widgets now ship in two sizes.","total_cost_usd":0.12,"num_turns":4}\n' "$session"
    exit 0
    ;;
  *MODE=rewire*)
    # Points the worktree's hooks somewhere else, then works and runs its hooks as usual.
    git config --worktree core.hooksPath /tmp/x
    echo 'widgets: 2' > widgets.txt
    git add widgets.txt && git commit -qm "Widgets after rewiring the hooks"
    log "rewired core.hooksPath"
    ;;
  *MODE=fail*)
    echo broken > state.txt
    git add state.txt && git commit -qm "Break the widgets"
    ;;
  *MODE=push*)
    printf 'FROM scratch\nCOPY missing /\n' > Dockerfile
    git add Dockerfile && git commit -qm "A Dockerfile"
    branch=$(git symbolic-ref --short HEAD)
    push="git push origin $branch"
    out=$(hook pre-tool-use "$(printf '{"session_id":"%s","transcript_path":"/tmp/t.jsonl","cwd":"%s","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"%s","description":"Push","timeout":120000,"run_in_background":false},"tool_use_id":"toolu_push"}' "$session" "$(pwd)" "$push")")
    log "pre-tool-use: $out"
    case "$out" in
      *'"permissionDecision":"deny"'*)
        denials=$(printf ',"permission_denials":[{"tool_name":"Bash","tool_use_id":"toolu_push","tool_input":{"command":"%s"}}]' "$push") ;;
      *) $push -q 2>>"$FAKE_LOG" ;;
    esac
    ;;
  *MODE=ask*)
    ask='{"questions":[{"question":"Postgres or SQLite for the cache?","header":"Store","options":[{"label":"Postgres","description":"shared by replicas"},{"label":"SQLite","description":"local"}],"multiSelect":false}]}'
    out=$(hook pre-tool-use "$(printf '{"session_id":"%s","transcript_path":"/tmp/t.jsonl","cwd":"%s","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"AskUserQuestion","tool_input":%s,"tool_use_id":"toolu_ask"}' "$session" "$(pwd)" "$ask")")
    log "ask: $out"
    case "$out" in
      *'"permissionDecision":"defer"'*)
        printf '{"type":"result","subtype":"success","session_id":"%s","is_error":false,"result":"","total_cost_usd":0.02,"num_turns":1,"deferred_tool_use":{"name":"AskUserQuestion","input":%s}}\n' "$session" "$ask"
        exit 0 ;;
    esac
    exit 9
    ;;
esac
log "stop: $(hook stop "$(stop_event "$session")")"
printf '{"type":"result","subtype":"success","session_id":"%s","is_error":false,"result":"Widgets now ship in two sizes.","total_cost_usd":0.12,"num_turns":4%s}\n' "$session" "$denials"
hook session-end "$(printf '{"session_id":"%s","transcript_path":"/tmp/t.jsonl","cwd":"%s","permission_mode":"default","hook_event_name":"SessionEnd","reason":"other"}' "$session" "$(pwd)")"
