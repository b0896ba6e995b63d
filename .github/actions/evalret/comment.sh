#!/usr/bin/env bash
# Post evalret's comment.md on a pull request, or update in place the comment an earlier run
# posted there (found by the hidden marker on its first line): one comment per pull request.
# It never fails the job: a token that may not write (a pull request from a fork) or any other
# API error becomes a warning.
#
# Environment: COMMENT_FILE (comment.md), PR_NUMBER, REPO (owner/name), GH_TOKEN (for gh).
set -uo pipefail

MARKER='<!-- evalret-comment -->'

warn() {
  # a workflow command is one line: %, CR and LF encoded as GitHub reads them back
  local message=${1//'%'/'%25'}
  message=${message//$'\r'/'%0D'}
  message=${message//$'\n'/'%0A'}
  echo "::warning title=evalret comment::$message"
  exit 0
}

[ -n "${PR_NUMBER:-}" ] || warn "not a pull request: no comment posted"
[ -f "${COMMENT_FILE:-}" ] || warn "no ${COMMENT_FILE:-comment file} to post (did evalret run?)"
[ "$(head -n 1 "$COMMENT_FILE")" = "$MARKER" ] || warn "$COMMENT_FILE does not start with $MARKER"

errors=$(mktemp)
trap 'rm -f "$errors"' EXIT

# the first comment of this pull request whose body starts with the marker
if ! ids=$(gh api --paginate "repos/$REPO/issues/$PR_NUMBER/comments" \
  --jq ".[] | select(.body | startswith(\"$MARKER\")) | .id" 2>"$errors"); then
  warn "cannot read the pull request's comments (a fork's read-only token?): $(head -c 300 "$errors")"
fi
id=$(printf '%s\n' "$ids" | head -n 1)

if [ -n "$id" ]; then
  gh api --method PATCH "repos/$REPO/issues/comments/$id" -F "body=@$COMMENT_FILE" \
    >/dev/null 2>"$errors" ||
    warn "cannot update comment $id (a fork's read-only token?): $(head -c 300 "$errors")"
  echo "evalret: updated the pull request comment $id"
else
  gh api --method POST "repos/$REPO/issues/$PR_NUMBER/comments" -F "body=@$COMMENT_FILE" \
    >/dev/null 2>"$errors" ||
    warn "cannot comment on the pull request (a fork's read-only token?): $(head -c 300 "$errors")"
  echo "evalret: commented on the pull request"
fi
