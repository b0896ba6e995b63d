#!/usr/bin/env bash
# Post evalret's comment.md on a pull request, or update in place the comment an earlier run
# posted there: one comment per pull request. Only a comment that starts with the hidden marker
# AND was written by the token's own user (GET /user; a GitHub Actions token, which may not read
# /user, writes as github-actions[bot]) is evalret's: a comment anyone else posts with the marker
# is never edited, so it cannot hold back the verdict. comment.md is posted only when its last
# line names this run's id ($EVALRET_RUN_ID): a comment.md left by an earlier run never is.
# It never fails the job: a token that may not write (a pull request from a fork) or any other
# API error becomes a warning.
#
# Environment: COMMENT_FILE (comment.md), PR_NUMBER, REPO (owner/name), GH_TOKEN, EVALRET_RUN_ID,
# GITHUB_API_URL (set by GitHub Actions; default https://api.github.com). Needs curl and jq.
set -uo pipefail

MARKER='<!-- evalret-comment -->'
ACTIONS_BOT='github-actions[bot]'
API=${GITHUB_API_URL:-https://api.github.com}
API=${API%/}
MAX_PAGES=100  # 100 comments a page: 10,000 comments read at most

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
[ -n "${EVALRET_RUN_ID:-}" ] || warn "no EVALRET_RUN_ID: cannot tell whether $COMMENT_FILE is this run's"
[ "$(tail -n 1 "$COMMENT_FILE")" = "<!-- evalret-run: $EVALRET_RUN_ID -->" ] ||
  warn "$COMMENT_FILE was not written by this run (run id $EVALRET_RUN_ID): not posted"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
headers=$scratch/headers
response=$scratch/response

# api METHOD URL [curl arguments...]: the response body in $response, its headers in $headers;
# fails (status 1, the error text on stdout) unless GitHub answers 2xx
api() {
  local method=$1 url=$2 status
  shift 2
  if ! status=$(curl -sS -X "$method" -D "$headers" -o "$response" -w '%{http_code}' \
    --proto '=https,http' --max-time 60 \
    -H "Authorization: Bearer ${GH_TOKEN:-}" -H "Accept: application/vnd.github+json" \
    -H "X-GitHub-Api-Version: 2022-11-28" "$@" "$url" 2>"$scratch/curl"); then
    head -c 300 "$scratch/curl"
    return 1
  fi
  case "$status" in
    2??) return 0 ;;
    *) echo "HTTP $status: $(head -c 300 "$response")"; return 1 ;;
  esac
}

# the next page of a paginated answer (its Link header), only on the same API
next_page() {
  local next
  next=$(tr -d '\r' <"$headers" | grep -i '^link:' | grep -o '<[^>]*>; *rel="next"' |
    sed 's/^<\([^>]*\)>.*$/\1/' | head -n 1)
  case "$next" in
    "$API"/*) printf '%s\n' "$next" ;;
    *) ;;
  esac
}

# whose comments are evalret's: the token's own user, else the Actions bot
if api GET "$API/user" >/dev/null && me=$(jq -er '.login | select(type == "string")' "$response"); then
  :
else
  me=$ACTIONS_BOT
fi

# the first comment of this pull request that starts with the marker and that we wrote
id=
url="$API/repos/$REPO/issues/$PR_NUMBER/comments?per_page=100"
for ((page = 1; page <= MAX_PAGES; page++)); do
  error=$(api GET "$url") ||
    warn "cannot read the pull request's comments (a fork's read-only token?): $error"
  id=$(jq -r --arg marker "$MARKER" --arg me "$me" \
    'first(.[] | select((.body // "" | startswith($marker)) and .user.login == $me) | .id) // empty' \
    "$response") || warn "the pull request's comments are not the JSON GitHub sends"
  [ -z "$id" ] || break
  url=$(next_page)
  [ -n "$url" ] || break
done

[[ -z "$id" || "$id" =~ ^[0-9]+$ ]] || warn "comment id $id is not a number"
jq -Rs '{body: .}' <"$COMMENT_FILE" >"$scratch/payload"
if [ -n "$id" ]; then
  error=$(api PATCH "$API/repos/$REPO/issues/comments/$id" --data-binary "@$scratch/payload") ||
    warn "cannot update comment $id (a fork's read-only token?): $error"
  echo "evalret: updated the pull request comment $id"
else
  error=$(api POST "$API/repos/$REPO/issues/$PR_NUMBER/comments" --data-binary "@$scratch/payload") ||
    warn "cannot comment on the pull request (a fork's read-only token?): $error"
  echo "evalret: commented on the pull request"
fi
