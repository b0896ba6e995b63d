#!/usr/bin/env python3
# ruff: noqa: E501  (the corpus and the query table are data; long lines are intended)
"""Generate the evalret demo golden set (golden_sets/demo/).

The corpus describes an imagined product, Loomwell: a managed object-storage
and data-pipeline SaaS. Storage buckets are called "spools", pipelines are
called "weaves", the CLI is `loom`, error codes look like `LMW-4031`.
Everything here is invented; no real product documentation was used.

Usage:  python scripts/make_demo_golden_set.py [--out golden_sets/demo]

The output is deterministic: running the script twice gives identical files.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

SECTIONS: list[tuple[str, str]] = []


def section(name: str, body: str) -> None:
    SECTIONS.append((name, body))


# ---------------------------------------------------------------------------
# Corpus. Each record starts with "@@ key | title"; the following lines, up to
# the next record, are the passage text (whitespace is normalised).
# ---------------------------------------------------------------------------

section("installation", r"""
@@ inst-macos | Installing the loom CLI on macOS
The loom command-line tool is distributed as a signed universal binary for
Intel and Apple silicon Macs. The recommended method is Homebrew: run
`brew install loomwell/tap/loom`, then confirm it works with `loom version`. If
you prefer not to use Homebrew, download the .pkg installer from the Downloads
page of the console; it places the binary in /usr/local/bin and installs zsh
completion. macOS 12 Monterey or later is required. Gatekeeper may ask for
confirmation on first launch when the installer was fetched through a browser;
choose Open to continue.

@@ inst-linux | Installing the loom CLI on Linux
On Linux, loom ships as a static binary for x86_64 and arm64 as well as native
packages. Debian and Ubuntu users can add the apt repository at
apt.loomwell.dev and run `sudo apt install loom`; Fedora, RHEL and Rocky users
can enable the rpm repository and run `dnf install loom`. For other
distributions use the install script: `curl -fsSL https://get.loomwell.dev | sh`.
The script verifies the SHA-256 checksum before copying the binary to
~/.local/bin. glibc 2.28 or newer is required; a musl build for Alpine is
published separately as loom-linux-musl.

@@ inst-windows | Installing the loom CLI on Windows
Windows 10 build 19041 and later are supported. Install with winget using
`winget install Loomwell.Loom`, or download the MSI package, which adds loom to
the system PATH and registers PowerShell completion. After installing, open a
new terminal so the updated PATH is picked up; running loom in a window that
was already open is the most common reason for the message "loom is not
recognized as an internal or external command". WSL users should install the
Linux build inside their distribution instead of calling the Windows binary
across the filesystem boundary.

@@ inst-docker | Running loom from the official container image
For CI systems and ephemeral environments, the CLI is published as a container
image at registry.loomwell.dev/loom. Tags follow the CLI version, for example
4.2.1, and a floating `4` tag tracks the newest 4.x release; avoid `latest` in
production pipelines. Pass credentials with the LOOMWELL_TOKEN environment
variable rather than mounting your configuration directory. To work with local
files, mount the working directory:
`docker run --rm -e LOOMWELL_TOKEN -v "$PWD:/work" -w /work registry.loomwell.dev/loom:4 cp ./data spool://raw/`.
The image is distroless and contains no shell.

@@ inst-pysdk | Installing the Python SDK
The Python SDK is published on PyPI as loomwell and supports CPython 3.9
through 3.13. Install it with `pip install loomwell`, or with
`pip install "loomwell[async]"` to add the optional asyncio transport. The SDK
reads the same configuration file and environment variables as the CLI, so a
machine where `loom login` has already been run needs no further setup. Pin a
minor version in production, for example loomwell~=2.6, because minor releases
may deprecate methods with a warning before they are removed in the next major
version.

@@ inst-jssdk | Installing the JavaScript and TypeScript SDK
The JavaScript SDK is the npm package @loomwell/sdk. It runs on Node.js 18 or
later, Deno, Bun, and edge runtimes that implement the Fetch API. Install it
with `npm install @loomwell/sdk` or the pnpm and yarn equivalents. Type
definitions are bundled, so no separate types package is needed. In browser
code, never embed a long-lived API token: have your backend mint a presigned
URL or a short-lived scoped token and hand that to the page instead. The
package is ESM-first, with a CommonJS build for require() users.

@@ inst-gosdk | Installing the Go SDK
Add the Go SDK to a module with `go get go.loomwell.dev/sdk/v3`. The major
version suffix matches the REST API version the module targets; the older
go.loomwell.dev/sdk/v2 module only speaks API v2 and stops receiving fixes when
v2 is retired. Go 1.21 or later is required. The client is safe for concurrent
use, so create one with loomwell.NewClient at startup and share it between
goroutines instead of constructing a new client per request, which defeats
connection pooling and quickly runs into rate limits.

@@ inst-upgrade | Upgrading the loom CLI
Run `loom upgrade` to replace the current binary with the newest release on
your channel. Homebrew, apt, dnf and winget installations should be upgraded
through the package manager instead; loom upgrade detects them and prints the
right command. Use `loom upgrade --channel beta` to opt into preview builds and
`loom upgrade --version 4.1.3` to install one specific version, which is handy
for pinning after a regression. The CLI checks for new versions once a day and
prints a one-line notice; set cli.update_check = false to silence it.

@@ inst-uninstall | Uninstalling loom and removing local data
Remove the CLI with the same tool you used to install it, for example
`brew uninstall loom` or `sudo apt remove loom`. Uninstalling does not delete
your profiles or cached credentials. To remove everything, also delete
~/.loomwell on macOS and Linux, or %APPDATA%\Loomwell on Windows; that directory
holds config.toml, the credentials file and the local transfer cache. If you
only want to sign out, run `loom logout --all`, which revokes the stored
sessions on the server as well as deleting them locally.

@@ inst-requirements | System requirements for the CLI
The CLI needs about 60 MB of disk space plus room for its transfer cache, which
defaults to 2 GB and can be moved or shrunk. Outbound HTTPS on port 443 to
*.loomwell.dev is required; no inbound ports are used. Supported platforms are
macOS 12 and later, Windows 10 build 19041 and later, and Linux with glibc 2.28
or newer, or musl. The system clock must be within five minutes of real time
because request signatures include a timestamp. Self-hosted runners have
additional requirements that are described on their own page.

@@ inst-completion | Enabling shell completion
loom generates completion scripts for bash, zsh, fish and PowerShell. For zsh
run `loom completion zsh > "${fpath[1]}/_loom"`; for bash add
`source <(loom completion bash)` to ~/.bashrc. Completions cover subcommands,
flags and profile names and, when you are signed in, the names of spools and
weaves in the active project, fetched through a short-lived cache. If dynamic
completion feels sluggish on a high-latency connection, set
cli.completion_remote = false so that only static values are completed.

@@ inst-quickstart | Quickstart: your first spool and weave
This five-minute tour assumes the CLI is installed. Sign in with `loom login`,
which opens your browser. Create a storage spool with
`loom spool create demo-raw --region fra-1` and upload a file with
`loom cp ./events.csv spool://demo-raw/`. Next, scaffold a pipeline with
`loom weave init hello`, which writes a weave.yaml containing one step that
counts the lines of each new object. Deploy it with `loom weave deploy`, start
it with `loom weave run hello`, and watch the output with
`loom weave logs hello --follow`.

@@ inst-proxy | Using loom behind a corporate proxy
loom honours the standard HTTPS_PROXY and NO_PROXY environment variables. To
make the setting persistent for a profile, set net.proxy in config.toml, for
example net.proxy = "http://proxy.corp.example:3128". Proxies that inspect TLS
present their own certificate, so you must also point net.ca_bundle at a PEM
file containing your company root CA; otherwise every command fails with
LMW-6002. Basic credentials embedded in the proxy URL are supported. NTLM and
Kerberos proxies need a local forwarding helper.

@@ inst-offline | Installing on air-gapped hosts
For hosts without internet access, download the versioned tarball, for example
loom_4.2.1_linux_amd64.tar.gz, together with its .sha256 file on a connected
machine, verify the checksum, and copy both across. Extract the binary to any
directory on the PATH. Installation itself needs no network, but the CLI must
reach a Loomwell endpoint to do useful work; for private-link or dedicated
deployments set api.endpoint to the internal hostname supplied by your account
team. Disable the daily version check with cli.update_check = false to avoid
slow start-up caused by timeouts.

@@ inst-verify | Verifying release signatures
Every release artifact is accompanied by a detached .sig file made with the
Loomwell release key, whose fingerprint is listed on the Security page. Verify
a download with `gpg --verify loom_4.2.1_linux_amd64.tar.gz.sig`. On macOS the
binary is also notarized, and on Windows the MSI carries an Authenticode
signature. `loom version --verbose` prints the commit hash, build date and the
release channel the binary came from; support will ask for this output when you
open a ticket about the CLI.
""")

section("cli", r"""
@@ cli-login | loom login
`loom login` authenticates the CLI and stores a session in the local
credentials file. By default it opens a browser window and uses the device
authorization flow; on headless machines pass --no-browser to get a short code
and a URL to open on another device. Use --profile NAME to store the session
under a named profile, which keeps work and personal organizations apart.
Automation should not use loom login at all: set LOOMWELL_TOKEN to an API token
instead. Sessions last 12 hours by default and refresh automatically while the
CLI is in use.

@@ cli-logout | loom logout
`loom logout` deletes the session for the active profile from the local
credentials file and revokes it on the server. Add --all to sign out of every
profile at once. Logging out does not affect API tokens created with
`loom token create`; those stay valid until they expire or are revoked
explicitly. If the server cannot be reached, logout still removes the local
copy and prints a warning that the remote session will simply run out at the
end of its lifetime.

@@ cli-spool-create | loom spool create
Creates a new storage spool in the active project. Spool names must be 3 to 63
characters of lowercase letters, digits and hyphens, and are unique per region
across all Loomwell customers. The --region flag chooses where the data lives
and cannot be changed afterwards. Optional flags: --versioning turns on object
versioning from the start, --class sets the default storage class (hot, cool or
deep), and --lock-mode governance|compliance enables object lock, which can only
be decided at creation time. Example:
`loom spool create invoices-2024 --region ams-1 --versioning`.

@@ cli-spool-ls | loom spool ls
Lists the spools in the active project together with region, default storage
class, object count and total size. Counts and sizes are refreshed roughly
every 15 minutes, so freshly uploaded data may not be reflected straight away.
Use --all-projects to list across every project you can access and
--output json for machine-readable output. Passing a URI such as
`loom spool ls spool://logs/2024/` lists the objects under that prefix
instead; add --recursive to descend into nested prefixes and --versions to show
noncurrent versions too.

@@ cli-spool-rm | loom spool rm
Deletes a spool. By default the command refuses to remove a spool that still
contains objects and fails with LMW-2304. Pass --force to delete every object,
including noncurrent versions, and then the spool itself; you are asked to type
the spool name to confirm unless --yes is also given. Spools with object lock in
compliance mode cannot be force-deleted until every locked version has passed
its retain-until date. A deleted spool name becomes available to other
customers after a 14-day cool-off period.

@@ cli-cp | loom cp
Copies files between your machine and spools, or between two spools. Local to
remote: `loom cp ./report.pdf spool://docs/2024/`. Remote to local:
`loom cp spool://docs/2024/report.pdf .`. Copying a directory requires
--recursive. Files larger than transfer.multipart_threshold are uploaded in
parallel parts automatically. Spool-to-spool copies within one region happen
server-side without downloading the data; copies across regions stream through
the service and count as egress. Use --class to set the storage class of the
new objects and --meta key=value to attach user metadata.

@@ cli-mv | loom mv
Moves objects by copying them to the destination and then deleting the source.
It accepts the same arguments as `loom cp`, including --recursive. Because
spools have no real directories, moving a prefix means rewriting every object
under it, which can take a long time for large trees and is billed as a copy
plus a delete. If the source spool has versioning enabled, the delete leaves a
delete marker and the old versions keep consuming storage until a lifecycle
rule expires them.

@@ cli-rm | loom rm
Deletes objects. `loom rm spool://tmp/old.csv` removes one object;
`loom rm --recursive spool://tmp/2023/` removes everything under a prefix and
lists what will be deleted before asking for confirmation. On versioned spools
rm only adds a delete marker; pass --version-id to permanently remove one
specific version, or --all-versions to purge the object history entirely.
Deleting objects still under object lock retention fails with LMW-2350. Use
--dry-run to preview a large deletion without changing anything.

@@ cli-sync | loom sync
Makes a destination match a source, transferring only new or changed files. By
default files are compared by size and modification time; pass
--compare checksum for an exact but slower comparison. sync never deletes
files at the destination unless you add --delete (or set sync.delete = true),
in which case files missing from the source are removed. Exclude paths with
--exclude "*.tmp", which can be repeated. sync works in both directions,
local to spool and spool to local, and between spools.

@@ cli-presign | loom presign
Generates a presigned URL that lets someone without a Loomwell account
download, or with --method PUT upload, a single object. The URL embeds a
signature and an expiry; the default lifetime is one hour and the maximum is
seven days, set with --expires 36h. Anyone holding the link can use it until it
expires, so treat it like a password. Presigned URLs stop working immediately if
the API token or session that signed them is revoked. Example:
`loom presign spool://exports/q3.parquet --expires 2h`.

@@ cli-weave-init | loom weave init
Scaffolds a new weave in the current directory. `loom weave init NAME` writes a
weave.yaml with one example step, a .loomignore file and a README stub.
Templates are available with --template: python, node, shell, dbt and
spark-lite. The generated file passes validation as-is, so you can deploy it
immediately to check your setup. Running init in a directory that already
contains weave.yaml fails unless you pass --force, which overwrites the file
without asking.

@@ cli-weave-deploy | loom weave deploy
Uploads the weave definition in the current directory and creates a new
revision. The command validates weave.yaml locally first and stops on any
schema error, printing the offending line. Each deploy gets an increasing
revision number, and runs that are already in progress keep using the revision
they started with. Use --message to record a change note, shown in the console
history, and --dir to deploy from another directory. In CI, combine
--wait with --output json to capture the new revision id.

@@ cli-weave-run | loom weave run
Starts a run of a deployed weave immediately, regardless of its triggers.
`loom weave run nightly-etl` uses the newest revision; --revision 14 pins an
older one. Pass parameters with --param key=value; they are available to steps
as environment variables prefixed with PARAM_. The command returns the run id as
soon as the run is queued. Add --wait to block until the run finishes, in which
case the exit code is 0 on success and 1 on failure, which makes it convenient
in scripts.

@@ cli-weave-logs | loom weave logs
Shows the logs of a run. Without arguments it prints the logs of the latest run
of the weave; pass --run RUN_ID for a specific run and --step NAME to filter one
step. --follow streams new lines as they arrive until the run ends, and --since
15m limits output to recent lines. Logs are retained for 30 days on Starter and
Team plans and 90 days on Scale and Enterprise. Lines longer than 16 KB are
truncated and marked with an ellipsis.

@@ cli-weave-pause | loom weave pause and loom weave resume
`loom weave pause NAME` stops a weave's triggers from starting new runs: cron
schedules are skipped and object events are ignored, not queued. Runs that are
already executing continue to completion; cancel them separately with
`loom run cancel`. `loom weave resume NAME` re-enables the triggers from that
moment on; skipped schedule slots are not replayed unless you pass
--catch-up, which starts a single run covering the missed interval.

@@ cli-weave-rollback | loom weave rollback
Rolls a weave back to an earlier revision. `loom weave rollback nightly-etl`
reactivates the revision deployed before the current one; --to 12 picks a
specific revision. Rollback does not delete the newer revisions; it creates a
new revision whose content is a copy of the chosen one, so the history remains
linear and auditable. Secrets and environment variables are not part of a
revision and are unaffected. This command was introduced in CLI 4.2.0.

@@ cli-run-cancel | loom run cancel
Cancels a queued or running run. Steps that are executing receive SIGTERM and
have 30 seconds to exit cleanly before SIGKILL is sent. The run ends with status
cancelled, and cancelled runs do not trigger on-failure hooks. To cancel every
active run of a weave, use `loom run cancel --weave NAME --all`. Compute
consumed before the cancellation is still billed, rounded up to the next whole
minute per step.

@@ cli-run-ls | loom run ls
Lists recent runs of all weaves in the project, newest first, with status,
trigger, duration and revision. Filter with --weave NAME, --status failed or
--since 7d. Statuses are queued, running, succeeded, failed, cancelled and
timed_out. The listing shows 50 runs by default; use --limit up to 1000 or
--output json with a page token to fetch more. Runs older than the log
retention period still appear in the list but their logs are gone.

@@ cli-config | loom config get, set and list
Reads and writes settings in config.toml. `loom config set transfer.max_concurrency 16`
writes a value for the active profile; add --global to write it to the
[default] table used by every profile. `loom config get net.proxy` prints the
effective value and where it came from: flag, environment variable, profile or
built-in default. `loom config list` shows every key that differs from its
default. Setting a key the CLI does not recognise fails with LMW-6021 unless you
pass --force.

@@ cli-profile | loom profile commands
Profiles let one machine talk to several organizations, projects or
endpoints. `loom profile add staging --project web-stg --region iad-1` creates
a profile, `loom profile use staging` makes it the default, and
`loom profile ls` lists all profiles with the active one highlighted. Any
command can target a different profile with --profile NAME or the
LOOMWELL_PROFILE environment variable. Referring to a profile that does not
exist fails with LMW-6030. Profiles are stored as tables in config.toml.

@@ cli-token | loom token create and loom token revoke
Creates and manages API tokens. `loom token create --name ci-deploy --scope weave:deploy --expires 90d`
prints the token once; store it immediately in your secret manager because it
cannot be shown again. Scopes can be repeated, and tokens without an explicit
scope inherit all permissions of the creating user, which is discouraged.
`loom token ls` shows names, scopes, creation and last-use dates but never the
secret. `loom token revoke ci-deploy` invalidates a token at once, including any
presigned URLs it signed.

@@ cli-doctor | loom doctor
Runs a series of local and remote checks and prints a report: configuration
file syntax, credentials validity, clock offset against the server, DNS
resolution and TLS handshake to the API endpoint, proxy detection, and measured
upload and download throughput to the nearest region. Each check is marked ok,
warn or fail with a suggested fix. Attach the output of `loom doctor --share`
to support tickets; it redacts tokens and hostnames of proxies. Added in CLI
4.1.0.

@@ cli-global-flags | Global flags accepted by every loom command
Every loom command accepts a common set of flags. --profile selects a profile
from config.toml. --project and --region override the profile defaults for one
invocation. --output table|json|yaml controls formatting, replacing the --json
switch removed in CLI 4.0. --quiet suppresses progress bars, and --verbose (or
-v, repeatable up to -vvv) increases log detail, with -vvv printing HTTP
requests with credentials redacted. --no-color disables ANSI colours, which also
happens automatically when output is not a terminal.

@@ cli-dry-run | Previewing changes with --dry-run
Commands that modify or delete data accept --dry-run, which performs every
check and prints the planned actions without executing them. It is supported by
cp, mv, rm, sync, spool rm, lifecycle apply and weave deploy. For sync, the
preview lists each file that would be uploaded, downloaded or deleted, with a
summary line of total bytes. A dry run still needs read access to list the
source and destination, so it can fail with permission errors. sync gained
--dry-run in CLI 4.2.0.

@@ cli-exit-codes | CLI exit codes
loom exits with 0 on success and with a non-zero code otherwise, so scripts can
branch on the result. 1 means the operation itself failed, for example a run
that ended in failure with --wait. 2 indicates invalid usage such as an unknown
flag. 3 means authentication is missing or expired, 4 means a permission was
denied, and 5 signals a network problem reaching the endpoint. 6 is returned
when a quota or rate limit stopped the command. The matching LMW error code is
always printed to standard error.

@@ cli-output-json | Scripting with --output json
With --output json every command writes a single JSON document to standard
output and sends progress and warnings to standard error, so the output can be
piped straight into jq. List commands emit an object with an items array and a
next_page_token field when more results exist. Timestamps use RFC 3339 in UTC
and sizes are integers in bytes, unlike the human-readable table format. The
JSON schema is versioned with the CLI major version and only changes in a
backwards-compatible way within 4.x.

@@ cli-lifecycle | loom lifecycle
Manages lifecycle rules that transition or expire objects automatically.
`loom lifecycle show spool://logs` prints the current rules;
`loom lifecycle apply spool://logs rules.yaml` replaces them atomically. A rule
selects objects by prefix or tag and defines actions such as transition to cool
after 30 days, transition to deep after 180 days, expire after 365 days, or
delete noncurrent versions after 14 days. Rules are evaluated once a day, so
changes take up to 24 hours to take effect.

@@ cli-backup | loom backup
Creates and manages backups of a spool. `loom backup create spool://finance`
takes an on-demand backup; `loom backup ls spool://finance` lists existing
backups with size and expiry; `loom backup restore BACKUP_ID --to spool://finance-restored`
restores into a new or empty spool. Restoring into a spool that contains
objects requires --overwrite. Scheduled backups are configured with
`loom backup schedule`, described separately. Backups are available on Team
plans and above.

@@ cli-audit | loom audit export
Exports the organization audit log for a time range. `loom audit export --since 2025-01-01 --until 2025-02-01 --format ndjson > jan.ndjson`
writes one event per line with actor, action, target, source IP and result.
Only Owners and members with the audit:read permission can export. The audit
log keeps one year of history on Scale and seven years on Enterprise; Starter
and Team organizations can view the last 30 days in the console but cannot
export.

@@ cli-members | loom member invite and loom member rm
Manages who belongs to your organization. `loom member invite ana@example.com --role editor --project analytics`
sends an invitation that is valid for seven days. `loom member ls` lists members
with their roles, and `loom member rm ana@example.com` removes someone
immediately, revoking their sessions; API tokens they created are revoked too
unless you pass --keep-tokens. When SCIM provisioning is enabled, membership is
managed by the identity provider and these commands are read-only.

@@ cli-quota | loom quota show
Shows the limits that apply to the active project and how much of each is in
use: storage, spool count, concurrent runs, concurrent upload sessions, API
requests per minute and monthly compute credits. Values close to their limit
are highlighted in yellow and values at the limit in red. Use --org to see
organization-wide totals. To request a higher limit, run
`loom quota request concurrent_runs 40 --reason "month-end batch"`, which opens
a ticket pre-filled with your current usage.

@@ cli-secret | loom secret set
Stores a secret for use in weaves. `loom secret set DB_PASSWORD --weave nightly-etl`
prompts for the value without echoing it, or reads it from standard input with
--stdin. Secrets can be scoped to one weave or to the whole project with
--project-wide. Values are encrypted at rest and only ever decrypted inside a
runner; `loom secret ls` shows names and update dates but never values.
Referencing a missing secret in weave.yaml fails the run with LMW-3210.

@@ cli-region-ls | loom region ls
Prints every region available to your organization with its code, city,
whether GPU runners are offered, and measured latency from your machine. Codes
such as fra-1 or sin-1 are what you pass to --region. Regions that require a
contract, such as dedicated sovereign regions, are listed only after they have
been enabled for your account. Use --output json to get the public endpoint
hostname for each region when you need to configure firewalls.
""")

section("configuration", r"""
@@ cfg-file | The config.toml file and precedence rules
The CLI and the SDKs read settings from ~/.loomwell/config.toml
(%APPDATA%\Loomwell\config.toml on Windows). Settings in the [default] table
apply to every profile; each [profile.NAME] table overrides them for that
profile. When the same setting is given in several places, the order of
precedence is: command-line flag, then environment variable (LOOMWELL_ followed
by the key in upper case with dots replaced by underscores), then the active
profile, then [default], then the built-in default. CLI versions before 4.0
used a YAML file at ~/.loomrc instead.

@@ cfg-api-endpoint | api.endpoint
Sets the base URL of the Loomwell API. The default is
https://api.loomwell.dev, and the CLI appends the API version path itself. You
only need to change it for private-link connectivity, dedicated deployments, or
the staging sandbox at https://api.sandbox.loomwell.dev, which has its own
accounts and does not share data with production. Do not include a version
segment such as /v3 in the value; combine it with api.version instead.
Environment variable: LOOMWELL_API_ENDPOINT.

@@ cfg-api-version | api.version
Chooses which REST API version the CLI and SDKs talk to: v3 (default since CLI
4.0) or v2. Setting v2 is only meant as a temporary escape hatch for scripts
that rely on v2 behaviour such as offset pagination; several newer commands,
including weave rollback and object lock management, refuse to run against v2.
API v2 is deprecated and will be switched off on 30 September 2025, after which
this setting accepts only v3.

@@ cfg-net-proxy | net.proxy
The URL of an HTTP proxy used for all requests, for example
http://proxy.corp.example:3128. Credentials can be embedded as
http://user:pass@host:port. When unset, the CLI falls back to the HTTPS_PROXY
and NO_PROXY environment variables. Set net.proxy = "" explicitly to ignore
those variables for one profile, which is useful when an internal endpoint is
reachable only directly. SOCKS5 proxies are supported with the socks5:// scheme.

@@ cfg-net-ca-bundle | net.ca_bundle
Path to a PEM file with additional certificate authorities to trust, used when
a TLS-inspecting proxy or private endpoint presents a certificate that is not
signed by a public CA. The file may contain several certificates concatenated.
The bundle is added to the system trust store, not used instead of it. If the
path does not exist, every command fails at start-up with LMW-6020. There is
deliberately no option to disable certificate verification entirely.

@@ cfg-net-connect-timeout | net.connect_timeout
How long the client waits to establish a TCP and TLS connection to the
endpoint before giving up, in seconds. The default is 10. Raising it helps on
satellite links or when a proxy is slow to open tunnels, but does not help
when a transfer stalls after it has started; that is governed by
net.read_timeout. A connection that cannot be established within the timeout is
retried according to net.max_retries and finally reported as LMW-6001.

@@ cfg-net-read-timeout | net.read_timeout
The maximum number of seconds the client waits for the next chunk of data on an
already-open connection. The default is 60. Long server-side operations, such
as server-side copies of very large objects, keep the connection alive with
progress bytes, so they are not affected. Increase the value if downloads from a
distant region abort midway on an unreliable network. Setting 0 disables the
timeout, which is not recommended because a dead connection then hangs forever.

@@ cfg-net-max-retries | net.max_retries
The number of times the client retries a request that failed with a network
error, a 5xx response or a 429 rate-limit response, before surfacing the error.
The default is 5, with exponential backoff starting at half a second and
capped at 20 seconds; a Retry-After header from the server always takes
precedence. Non-idempotent requests are only retried when they carry an
idempotency key, which the CLI and SDKs add automatically. This setting is
unrelated to the retries field of a weave step, which controls how failed steps
are re-executed.

@@ cfg-transfer-multipart-threshold | transfer.multipart_threshold
Files at or above this size are uploaded with a multipart upload instead of a
single PUT request. The default is 64 MiB; values accept units such as 128MiB or
1GiB. A single PUT can carry at most 5 GiB, so the threshold cannot be set above
that. Lower thresholds improve resumability on unreliable links, because a
failed part can be retried alone, at the cost of more requests. The size of the
individual parts is configured separately with transfer.multipart_chunk_size.

@@ cfg-transfer-multipart-chunk-size | transfer.multipart_chunk_size
The size of each part in a multipart upload. The default is 16 MiB and the
minimum is 5 MiB, except for the final part. Because an upload may contain at
most 10,000 parts, the CLI automatically enlarges the chunk size for very large
files; a 500 GiB file, for example, uses parts of about 52 MiB regardless of
this setting. Larger chunks reduce request overhead on fast networks, while
smaller chunks waste less work when a part has to be retried.

@@ cfg-transfer-max-concurrency | transfer.max_concurrency
The number of parts or files transferred in parallel. The default is 8. On
high-bandwidth links to a nearby region, values of 32 to 64 can saturate a
10 Gbit/s connection; on home connections a high value mostly increases memory
use, since each worker buffers one chunk in memory. Each concurrent multipart
upload counts towards the project's limit of concurrent upload sessions, so
very high values across many machines can trigger LMW-4032.

@@ cfg-transfer-bandwidth-limit | transfer.bandwidth_limit
Caps the total transfer rate of the CLI, for example 50MB/s or 200Mbit/s, so
that large uploads do not saturate a shared office link. The limit applies per
process across all parallel workers. It is unset by default, meaning no limit.
For one-off commands use the --bwlimit flag instead. The cap is approximate,
averaged over a few seconds, and does not apply to server-side copies between
spools in the same region, which never pass through your machine.

@@ cfg-transfer-checksum | transfer.checksum
The integrity algorithm used for uploads and downloads: crc32c (default),
sha256, or none. With crc32c or sha256 the client computes a checksum while
sending each part and the server rejects the part if its own computation
differs, reporting LMW-2207. sha256 is slower on machines without hardware
acceleration but is required by some compliance regimes. none skips the check
and should only be used for data that is verified by other means.

@@ cfg-sync-delete | sync.delete
When true, `loom sync` deletes files at the destination that no longer exist
at the source, making the destination an exact mirror. The default is false,
so sync only ever adds and updates. Because enabling it in config.toml changes
the behaviour of every sync run for that profile, most teams prefer passing
--delete explicitly on the commands that need it. Deletions on a versioned spool
only add delete markers, so files can still be recovered.

@@ cfg-sync-compare | sync.compare
Decides how `loom sync` detects changed files. size-mtime, the default,
compares file size and modification time and is fast because it needs no file
reads. checksum computes a CRC32C of every local file and compares it with the
stored checksum, catching changes that preserve size and timestamp at the cost
of reading everything. size-only ignores timestamps, which helps when a tool
rewrites modification times without changing content.

@@ cfg-sync-exclude | sync.exclude
A list of glob patterns that `loom sync` and recursive `loom cp` always skip,
for example sync.exclude = ["*.tmp", ".git/**", "node_modules/**"]. Patterns
match paths relative to the source root. Patterns from the --exclude flag are
added to this list rather than replacing it. A .loomignore file in the source
directory is honoured as well and uses the same syntax as .gitignore, including
negation with an exclamation mark.

@@ cfg-cache-dir | cache.dir
The directory where the CLI keeps resumable upload state, downloaded part
files and the completion cache. Defaults to ~/.loomwell/cache. Point it to a
larger or faster disk when transferring huge files, because interrupted
multipart downloads are assembled there. Not to be confused with the cache
section of weave.yaml, which persists directories between runs of a pipeline on
the server side.

@@ cfg-cache-max-size | cache.max_size
The maximum size of the local transfer cache, default 2GiB. When the cache
grows beyond this size, the oldest completed entries are evicted first; state
for uploads that are still resumable is kept until it is older than seven days.
Setting the value to 0 disables resumable transfers entirely, so an interrupted
upload restarts from the beginning. `loom cache clear` empties the cache
manually.

@@ cfg-log-level | log.level
Controls how much the CLI logs: error, warn (default), info, debug or trace.
debug includes request ids, which support needs to trace a problem on the
server side, while trace also dumps request and response headers with
credentials redacted. The -v flags raise the level for one command. Logs go to
standard error unless log.file is set. The SDKs honour the same key when they
are configured from config.toml.

@@ cfg-log-file | log.file
Writes CLI logs to a file in addition to standard error. Relative paths are
resolved against ~/.loomwell. The file is rotated at 10 MB, keeping five old
files. Combined with log.level = "debug" this is the easiest way to capture
the details of an intermittent failure in a nightly cron job, where standard
error may not be kept. Set log.format = "json" for structured lines that can be
shipped to a log platform.

@@ cfg-cli-update-check | cli.update_check
When true (default), the CLI checks at most once a day whether a newer release
is available and prints a one-line notice to standard error. The check runs in
the background and never delays commands by more than 300 milliseconds. Set it
to false on air-gapped machines, in containers or CI where the notice is noise.
The environment variable LOOMWELL_NO_UPDATE_CHECK=1 has the same effect.

@@ cfg-cli-output | cli.output
The default output format for commands when --output is not given: table,
json or yaml. Changing the default to json is convenient on machines that only
run scripts, but it also affects interactive use. Note that progress bars are
always written to standard error and are suppressed automatically when
standard error is not a terminal, regardless of this setting.

@@ cfg-region | region and project (profile defaults)
The region and project keys set the defaults for a profile, so commands need
no --region or --project flag. region is only used when creating resources;
existing spools are always addressed in the region where they were created,
whatever this setting says. project accepts a project slug or id. The
environment variables LOOMWELL_REGION and LOOMWELL_PROJECT override both keys,
which is the usual approach in CI.

@@ cfg-telemetry | telemetry.enabled
The CLI sends anonymous usage data, such as the command name, flags used
(without values), exit code, duration and operating system, to help prioritise
development. No file names, spool names, tokens or content are ever included.
Set telemetry.enabled = false or the environment variable
LOOMWELL_TELEMETRY=0 to opt out. Enterprise organizations can disable telemetry
for all members centrally in the organization settings.

@@ cfg-env-vars | Environment variables reference
All configuration keys can be set through environment variables named
LOOMWELL_ plus the key in upper case with dots replaced by underscores, for
example LOOMWELL_TRANSFER_MAX_CONCURRENCY. A few variables have no config key:
LOOMWELL_TOKEN supplies an API token and takes precedence over stored sessions;
LOOMWELL_PROFILE picks the profile; LOOMWELL_CONFIG points to an alternative
config file; LOOMWELL_NO_UPDATE_CHECK disables the version check. Standard
variables HTTPS_PROXY, NO_PROXY and SSL_CERT_FILE are honoured too.

@@ cfg-migrate-loomrc | Migrating ~/.loomrc to config.toml
CLI 4.0 replaced the YAML file ~/.loomrc with ~/.loomwell/config.toml. On first
start, 4.x detects an old file and offers to convert it; run
`loom config migrate` to do it explicitly. Most keys keep their meaning under a
new name: parallel becomes transfer.max_concurrency, chunk_mb becomes
transfer.multipart_chunk_size, and proxy becomes net.proxy. The old
insecure option has no equivalent and is dropped with a warning. The original
file is left untouched so that 3.x installations keep working.
""")

section("weave-spec", r"""
@@ wv-overview | What is a weave?
A weave is a data pipeline that Loomwell runs for you. It is described in a
weave.yaml file with a list of steps, each running a container image or a
built-in action, plus triggers that decide when a run starts. Every deployment
of the file creates a revision; every execution is a run, with its own logs,
status and artifacts. Steps run on managed runners in the region of the
project, close to your spools, so reading and writing spool data from a weave
incurs no egress charges.

@@ wv-steps | Defining steps in weave.yaml
Steps are listed under the steps key and run in order unless they declare
dependencies. Each step needs a name and either image plus command, or uses to
reference a built-in action such as loom/copy or loom/notify. Steps share a
workspace directory mounted at /workspace, so one step can write files the
next one reads. Add needs: [extract] to run a step after specific other steps;
steps without mutual dependencies run in parallel, up to the weave's
concurrency setting.

@@ wv-triggers-schedule | Scheduling weaves with cron triggers
To run a weave on a schedule, add a trigger with a cron expression:
trigger: {schedule: "15 2 * * *"}. Expressions use five fields and are
evaluated in UTC unless timezone is set, for example timezone: Europe/Berlin,
in which case daylight-saving changes are handled by skipping or repeating the
affected hour. The shortest allowed interval is one minute on Scale and
Enterprise and five minutes on other plans. An invalid expression is rejected at
deploy time with LMW-3301.

@@ wv-triggers-object | Triggering weaves when objects arrive
An object trigger starts a run whenever a matching object is created in a
spool: trigger: {on_object: {spool: raw-events, prefix: incoming/, suffix: .csv}}.
The run receives the object key in the LOOM_TRIGGER_KEY environment variable.
Events are delivered at least once, so steps should be idempotent. Bursts are
batched when batch_window is set, for example 60s, in which case one run
receives a manifest of all keys created during the window instead of one run per
object.

@@ wv-secrets | Using secrets in a weave
Reference secrets in weave.yaml with secrets: [DB_PASSWORD, API_KEY] at the
weave or step level. Each listed secret is exposed to the step as an environment
variable with the same name. Values are injected at run time, never stored in
the revision and masked in logs: any line containing a secret value is printed
with the value replaced by asterisks. If a listed secret does not exist when the
run starts, the run fails with LMW-3210 before any step executes.

@@ wv-env | Environment variables and parameters in steps
Plain configuration values belong in env, which can be set at weave level and
overridden per step. Unlike secrets, env values are part of the revision and are
visible to anyone who can read the weave. Parameters passed with
`loom weave run --param` appear as PARAM_NAME variables. Loomwell also sets
LOOM_RUN_ID, LOOM_WEAVE, LOOM_REVISION and LOOM_STEP in every step, which is
useful for tagging output objects with their provenance.

@@ wv-timeout | Step and run timeouts
Two separate limits stop runaway pipelines. timeout on a step, default 60
minutes, limits a single step; exceeding it kills the step and reports
LMW-3105. timeout at weave level, default 6 hours, limits the whole run
including queueing and retries; exceeding it ends the run as timed_out with
LMW-3106. The absolute maximum run duration is 24 hours, or 72 hours on
Enterprise. Timeouts are written as durations such as 45m or 2h.

@@ wv-retries | Retrying failed steps
Set retries on a step to re-execute it automatically when it fails, for
example retries: 3. By default a retry happens after 30 seconds, doubling each
time; change this with retry_backoff: 10s and cap it with
retry_backoff_max: 5m. Only failures are retried: exit codes other than zero,
out-of-memory kills and runner losses. Timeouts are not retried unless
retry_on_timeout: true. Each attempt's logs are kept separately and labelled
with the attempt number.

@@ wv-concurrency | Controlling weave concurrency
The concurrency field limits how many runs of the same weave may execute at
once; additional triggered runs wait in the queue. The default is 1, which
guarantees runs never overlap, useful for pipelines that update shared state.
Set on_overlap: skip to drop new runs instead of queueing them. Independently,
your plan caps the number of concurrent runs across the whole project; when that
cap is hit, new runs are queued and the API reports LMW-4031 for runs started
with fail_if_queued.

@@ wv-runners | Runner sizes and machine types
Each step runs on a managed runner whose size is set with runner: {size: medium}.
small provides 2 vCPU and 4 GB memory, medium 4 vCPU and 8 GB, large 8 vCPU
and 32 GB, and xlarge 16 vCPU and 64 GB. gpu-small adds one inference-class
GPU and is available in iad-1, fra-1 and sin-1 only. Sizes are billed in
compute credits per minute: 1 for small, 2 for medium, 5 for large, 10 for
xlarge and 20 for gpu-small. Steps that exceed their memory are killed with
LMW-3130.

@@ wv-cache | Caching directories between runs
Declare cache: {paths: [/workspace/.pip, /workspace/node_modules], key: deps-v1}
to persist directories between runs of the same weave. The cache is restored
before the first step and saved after the last successful step, keyed by the key
string, so change the key to invalidate it. Caches are limited to 10 GB per weave
and expire after 14 days without use. They count towards storage billing.
This is unrelated to the CLI's local cache.dir setting.

@@ wv-artifacts | Publishing run artifacts
Files listed under artifacts are uploaded when a step finishes, even if it
fails, and appear on the run page for download: artifacts: [reports/*.html,
coverage.xml]. Artifacts are stored for the log retention period of your plan.
To keep outputs permanently, write them to a spool instead, for example with
the loom/copy action. Downloading an artifact that has already expired returns
LMW-3404. The total size of artifacts per run is limited to 5 GB.

@@ wv-conditions | Conditional steps and failure hooks
A step can declare when: to decide whether it runs, with values on_success
(default), on_failure, or always. A step with when: on_failure runs only if an
earlier step failed, which is the usual way to send an alert or clean up
partial output. Expressions are also allowed, for example
when: "params.full_refresh == 'true'". A run that is cancelled does not execute
on_failure steps, but always steps still get a 30-second window to run.

@@ wv-validate | Validating weave.yaml locally
`loom weave validate` checks weave.yaml without deploying it. It reports YAML
syntax errors, which the API would return as LMW-3001, and schema violations
such as unknown keys, missing step names or cycles in needs, which the API
returns as LMW-3002. The validator uses the same JSON Schema as the server,
published at schemas.loomwell.dev/weave-v2.json, so editors that support
YAML language servers can show errors while you type.

@@ wv-self-hosted | Self-hosted runners
Enterprise customers can run weave steps on their own machines with the
loom-runner agent, for data that must not leave their network. The agent makes
outbound connections only, needs Linux with cgroups v2 and Docker or Podman,
and registers with a runner-pool token. Steps target the pool with
runner: {pool: on-prem-gpu}. When no agent in the pool is online, runs wait in
the queue for up to 30 minutes and then fail with LMW-3220.

@@ wv-spec-v2 | weave.yaml schema version 2
Schema version 2, selected with version: 2 at the top of weave.yaml, became
the default in March 2024. Compared with version 1 it replaces the depends_on
key with needs, introduces when conditions, moves the cron expression from
schedule at the top level into trigger.schedule, and allows runner sizes per
step instead of per weave. Version 1 files still deploy, but the CLI prints a
deprecation warning and `loom weave migrate-spec` rewrites them automatically.
""")

section("error-codes", r"""
@@ err-1001 | LMW-1001: Invalid credentials
LMW-1001 is returned with HTTP 401 when the supplied token or password is not
recognised at all. Typical causes are a typo when pasting a token, a token that
was revoked, or a token from the sandbox used against production. Check which
credential the CLI is actually using with `loom auth whoami --verbose`, which
shows whether it came from LOOMWELL_TOKEN, a profile session or a flag. Unlike
LMW-1002, retrying or refreshing does not help: a new token has to be created.

@@ err-1002 | LMW-1002: Token expired
LMW-1002 means the token was valid but its lifetime has ended. Sessions from
`loom login` are refreshed automatically, so this code usually appears for API
tokens created with an expiry, or for sessions on a machine that was offline
longer than the refresh window of 30 days. For interactive use, run
`loom login` again. For automation, create a new token and update your secret
store; consider a token with a longer expiry or a workload identity instead.

@@ err-1010 | LMW-1010: Multi-factor authentication required
The organization requires multi-factor authentication and the current session
has not completed a second factor. This appears after an administrator turns on
MFA enforcement, because existing sessions must be upgraded. Sign out and sign
in again with `loom login`; the browser flow will prompt for your authenticator
app or security key. API tokens are not affected by MFA enforcement, since they
are issued only after an MFA-verified login.

@@ err-1014 | LMW-1014: Password login disabled by SSO enforcement
Your organization enforces single sign-on, so signing in with an email and
password is no longer allowed for members. Use the "Sign in with SSO" button in
the console, or `loom login --sso ORG_SLUG` in the CLI. Owners keep a
break-glass password login so they can repair a broken identity provider
configuration. If you are sure your account should use a password, ask an
owner to add you to the SSO bypass list.

@@ err-1020 | LMW-1020: Token is missing a required scope
The token authenticated successfully but was created with scopes that do not
cover the requested action, for example a token with only spool:read trying to
upload. The response lists the missing scope in the required_scope field.
Create a new token with the additional scope; scopes of an existing token cannot
be changed. This is different from LMW-1022, where the token has the scope
but the user behind it lacks the permission in this project.

@@ err-1021 | LMW-1021: Source IP address not allowed
The organization has an IP allowlist and the request came from an address that
is not on it. The error message includes the address the server saw, which is
often the public address of a NAT gateway or proxy rather than the machine's
own IP. Ask an administrator to add that address or range under Settings, then
Security, then IP allowlist. Presigned URLs are exempt from the allowlist unless
strict mode is enabled.

@@ err-1022 | LMW-1022: Permission denied in project
LMW-1022 is returned with HTTP 403 when the authenticated user or service
account does not hold a role granting the requested permission in the target
project. The response body names the permission, such as weave:deploy, and the
project. Being an administrator in one project grants nothing in another, so
check the project in your profile. Ask a project admin to bind a suitable role,
or create a custom role containing the missing permission.

@@ err-1033 | LMW-1033: SAML assertion signature invalid
The identity provider's response could not be verified against the signing
certificate stored in your SSO settings. This almost always happens right after
the IdP rotated its signing certificate. Download the new certificate or the
updated metadata XML from the identity provider and upload it under Settings,
then Single sign-on. During a rotation you can store two certificates at once
so that logins keep working while the IdP switches over.

@@ err-1034 | LMW-1034: SAML assertion outside its validity window
The SAML assertion was correctly signed but its NotBefore or NotOnOrAfter
timestamps do not include the current time. Either the identity provider's
clock is skewed, the assertion lifetime configured on the IdP is very short, or
the browser replayed an old login response, for example by pressing back. Loomwell
tolerates 3 minutes of clock skew. Check the IdP server time and ask users to
start the login from the beginning.

@@ err-1040 | LMW-1040: SCIM token invalid
The identity provider's provisioning requests are being rejected because the
SCIM bearer token is wrong, revoked or expired. SCIM tokens are created under
Settings, then Provisioning, and are valid for one year. When this error
appears, user changes in the IdP stop reaching Loomwell, so new employees cannot
sign in and departed employees keep access. Generate a new token, update it in
the IdP's provisioning configuration, and trigger a full sync.

@@ err-2001 | LMW-2001: Spool not found
The spool named in the request does not exist in the region the request was
sent to, or you do not have permission to know that it exists. Spool names are
case sensitive in URIs only by accident: they are always lowercase, so
spool://Logs will never match. Check the region, because a spool created in
ams-1 cannot be reached through the fra-1 endpoint. A spool that was just
deleted also returns this code.

@@ err-2002 | LMW-2002: Object not found
The spool exists but there is no object with the requested key, or the current
version is a delete marker. Keys are exact strings: a trailing slash, a
different Unicode normalisation of an accented character, or double slashes
make a different key. If the spool is versioned, list versions with
`loom spool ls --versions` to see whether the object was deleted and can be
restored from an older version.

@@ err-2107 | LMW-2107: Object too large for a single upload
A single PUT request may carry at most 5 GiB. Larger files must be uploaded with
a multipart upload. The CLI and SDKs switch to multipart automatically above
transfer.multipart_threshold, so this error usually comes from custom code
calling the REST API directly, or from a presigned PUT URL used for a big file.
Use the multipart endpoints or the SDK's upload_file method, which handles
splitting for you. The maximum object size is 5 TiB.

@@ err-2170 | LMW-2170: Multipart part too small
Every part of a multipart upload except the last must be at least 5 MiB. The
upload cannot be completed if an earlier part is smaller, and the complete
request fails with LMW-2170. The part numbers that violate the rule are listed
in the error details. Re-upload those parts with more data, or restart the
upload with a larger chunk size. CLI 4.1.2 had a bug producing this error for
files above 10 GB; it was fixed in 4.1.3.

@@ err-2207 | LMW-2207: Checksum mismatch on upload
The server calculated a different checksum for the uploaded bytes than the one
the client sent, so the data was rejected to avoid storing a corrupted object.
Usual causes are faulty network equipment, a proxy that rewrites content, or a
file that was modified while it was being uploaded. The CLI retries the
affected part automatically. If the error persists for a file that is still
being written, wait until the writer has finished before uploading.

@@ err-2270 | LMW-2270: Precondition failed, ETag does not match
A conditional request with If-Match or If-None-Match was rejected because the
object's current ETag does not satisfy the condition, returned as HTTP 412.
This is the expected outcome when two writers race to update the same object
using optimistic concurrency: the one that loses receives LMW-2270. Read the
object again, re-apply your change and retry with the new ETag. It does not
indicate data corruption.

@@ err-2304 | LMW-2304: Spool is not empty
A spool can only be deleted when it contains no objects and no noncurrent
versions. Either delete the contents first or use `loom spool rm --force`,
which empties and deletes the spool in one step. Incomplete multipart uploads
also count as contents; abort them with `loom multipart abort --all`. If the
spool uses object lock, locked versions cannot be removed before their
retention expires, and the spool cannot be deleted until then.

@@ err-2311 | LMW-2311: Spool name already taken
Spool names are unique per region across all Loomwell customers, so a name may
be unavailable even though you do not see it in your own project. Names of
recently deleted spools are also reserved for 14 days. Pick a different name,
for example by adding your organization slug as a prefix. Creating a spool with
the same name in a different region is allowed, but confusing, and usually
best avoided.

@@ err-2350 | LMW-2350: Object is locked
The object version is protected by object lock and its retain-until date has
not passed, or it carries a legal hold. Deletes and overwrites of that version
are refused. In governance mode, users with the spool:bypass_lock permission can
remove the lock with --bypass-governance. In compliance mode nobody, including
Loomwell support, can shorten the retention. Uploading a new version of the key
is still allowed on versioned spools.

@@ err-2402 | LMW-2402: Invalid storage class transition
The requested change of storage class is not allowed. Objects can move from hot
to cool to deep, but lifecycle rules cannot move them back towards a warmer
class; bringing deep objects back requires a restore request followed by a copy.
Objects smaller than 128 KB cannot transition to deep storage. The error is also
returned when a lifecycle rule would transition objects to cool less than 30
days after creation.

@@ err-2501 | LMW-2501: Object key too long
Object keys may be at most 1024 bytes when encoded as UTF-8. Note that the
limit is in bytes, not characters, so keys with many non-Latin characters reach
it sooner. Deeply nested prefixes generated by tools that mirror full absolute
paths are the usual culprit. Shorten the prefix, for example with the
--strip-prefix option of loom cp, or map long names to hashes and store the
original path in user metadata.

@@ err-3001 | LMW-3001: Weave definition could not be parsed
The weave.yaml file is not valid YAML, so the server could not read it at all.
Common causes are tabs used for indentation, an unquoted string containing a
colon followed by a space, or a cron expression beginning with an asterisk that
was not quoted. The error details give the line and column. Run
`loom weave validate` before deploying to catch these locally. Compare with
LMW-3002, which means the YAML was read but does not match the schema.

@@ err-3002 | LMW-3002: Weave definition failed schema validation
The weave.yaml is valid YAML but does not conform to the weave schema. The
error lists each violation with its path, for example steps[2].runner.size:
value "huge" is not one of small, medium, large, xlarge, gpu-small. Other
frequent violations are misspelled keys, a step without a name, duplicate step
names and dependency cycles in needs. Using version 1 keys such as depends_on
in a version 2 file also triggers this error.

@@ err-3105 | LMW-3105: Step timed out
A single step ran longer than its timeout, which defaults to 60 minutes, and
was killed. Other steps of the run may continue if they do not depend on it.
Check the step logs for where the time went; steps waiting on an external
database or an unresponsive API are the most common case. Raise the limit with
timeout: 3h on the step if long runtimes are expected. Timed-out steps are only
retried when retry_on_timeout is enabled.

@@ err-3106 | LMW-3106: Run exceeded its maximum duration
The run as a whole, measured from when it left the queue, lasted longer than
the weave-level timeout, which defaults to 6 hours. All still-running steps
were stopped and the run ended with status timed_out. This differs from
LMW-3105, which concerns one step. Slow retries with long backoff are a
frequent hidden cause. Increase timeout at weave level, up to the plan's
maximum of 24 hours, or 72 hours on Enterprise.

@@ err-3120 | LMW-3120: Step exited with a non-zero status
The step's command finished with an exit code other than zero and the step was
marked failed. The exit code is shown on the run page and at the end of the step
log. This error reflects a failure inside your own code or container, not a
platform problem, so the step log is the place to look. Codes 126 and 127
usually mean the command is not executable or not found in the image.

@@ err-3130 | LMW-3130: Step killed, out of memory
The step used more memory than its runner size provides and was terminated by
the kernel. The log often ends abruptly without an error message from your code.
Choose a larger runner size for that step, for example runner: {size: large}
with 32 GB, or reduce memory use by processing data in chunks instead of loading
whole files. Memory peaks are shown in the step metrics graph on the run page.

@@ err-3210 | LMW-3210: Secret not found
The weave references a secret that does not exist in its scope, so the run
failed before starting any step. Secret names are case sensitive. Check whether
the secret was created for a different weave rather than project-wide, or in
another project. Create it with `loom secret set NAME --weave WEAVE` and start
the run again. Renaming a secret requires updating every weave.yaml that lists
it.

@@ err-3220 | LMW-3220: No runner available
The run could not be scheduled because no runner with the requested size or
pool was available within 30 minutes. For managed runners this is rare and
usually limited to gpu-small during regional capacity shortages; choosing
another GPU region helps. For self-hosted pools it means no loom-runner agent in
the pool is online or all agents are busy. Check agent status with
`loom runner ls --pool NAME`.

@@ err-3301 | LMW-3301: Invalid schedule expression
The cron expression in trigger.schedule could not be parsed or describes an
interval shorter than your plan allows. Loomwell uses five-field expressions
(minute, hour, day of month, month, day of week); six-field expressions with
seconds are rejected. Named macros such as @daily and @hourly are accepted.
Quote the expression in YAML, because an unquoted leading asterisk is read as an
alias and causes LMW-3001 instead.

@@ err-3404 | LMW-3404: Artifact not found or expired
The requested run artifact does not exist. Artifacts are kept only for the log
retention period of your plan, 30 days on Starter and Team and 90 days on Scale
and Enterprise, after which they are deleted and requests return LMW-3404.
The error also appears when a step failed before writing the file listed under
artifacts. For long-term retention, copy outputs to a spool within the run.

@@ err-4013 | LMW-4013: Storage quota exceeded
The project has reached its storage limit, so new uploads are refused until
space is freed or the limit is raised. On the Starter plan the limit is 10 GB
and cannot be raised without upgrading. On paid plans a storage quota exists
only if an administrator has set one as a cost guardrail; ask them to raise it
under Project settings, then Quotas. Noncurrent versions and incomplete
multipart uploads count towards the quota.

@@ err-4029 | LMW-4029: Rate limit exceeded
Returned with HTTP 429 when a token sends more requests than its rate limit
allows. API v3 allows 1,200 requests per minute per token, with bursts of up to
200; API v2 allows 600 per minute shared by the whole organization. The
response includes a Retry-After header with the number of seconds to wait. The
CLI and SDKs back off automatically; custom clients must honour Retry-After and
use exponential backoff. Listing large spools page by page is a common cause.

@@ err-4031 | LMW-4031: Concurrent run limit reached
The project is already executing as many weave runs as its plan allows: 2 on
Starter, 5 on Team, 25 on Scale, and a contractual number on Enterprise.
Normally additional runs simply wait in the queue, but runs started with
fail_if_queued, or through the API with queue=false, are rejected with this
code instead. Spread schedules so that fewer runs start on the hour, lower the
concurrency of individual weaves, or request a higher limit.

@@ err-4032 | LMW-4032: Too many concurrent upload sessions
The project has more open multipart upload sessions than allowed, 500 by
default. Sessions stay open until they are completed or aborted, so crashed
upload scripts leave them behind and slowly fill the limit. List them with
`loom multipart ls` and abort stale ones with `loom multipart abort --older-than 24h`.
A lifecycle rule with abort_incomplete_uploads_after prevents the problem from
recurring.

@@ err-4040 | LMW-4040: Feature not available on your plan
The request uses a feature that your subscription does not include, for example
SSO on the Team plan, customer-managed keys below Enterprise, or gpu-small
runners on Starter. The response names the feature and the minimum plan that
includes it. Administrators can upgrade under Billing, then Plan; features
become available within a minute of the change. Trials of Scale features can be
requested from sales.

@@ err-4051 | LMW-4051: Monthly compute credits exhausted
The organization has used all compute credits included in its plan for the
current billing month and has no overage allowed. Starter organizations receive
500 credits a month and runs stop until the month resets on the first day at
00:00 UTC. On paid plans overage is billed automatically unless an
administrator has disabled it. Buy a credit pack or enable overage under Billing
to resume immediately.

@@ err-4052 | LMW-4052: Spending cap reached
An administrator set a monthly spending cap and the organization's charges for
the month have reached it, so billable operations such as weave runs, uploads
and egress are blocked. Reads of stored data within the same region and deletes
keep working. Unlike LMW-4051, this is a limit you configured yourself. Raise or
remove the cap under Billing, then Spending controls; the change applies within
a few minutes.

@@ err-4090 | LMW-4090: Organization suspended
The organization has been suspended, most often because an invoice is more than
21 days overdue, and all API requests except billing actions are refused. Data
is retained for 30 days after suspension and then scheduled for deletion.
Owners can still sign in to the console to update the payment method and pay the
outstanding balance, which lifts the suspension automatically within a few
minutes.

@@ err-5000 | LMW-5000: Internal server error
An unexpected error occurred inside Loomwell while handling the request. These
errors are tracked automatically, but if one keeps recurring, contact support
and include the request id from the x-loom-request-id response header or from
the CLI output with -v. Requests that failed with LMW-5000 are safe to retry if
they carry an idempotency key, which the CLI and SDKs attach automatically.

@@ err-5030 | LMW-5030: Service temporarily unavailable
The service is overloaded or undergoing maintenance and could not accept the
request. It comes with HTTP 503 and a Retry-After header. Scheduled maintenance
is announced on status.loomwell.dev at least seven days ahead and rarely causes
more than a few seconds of unavailability per request. If the status page shows
no incident and errors persist for more than ten minutes, contact support with
request ids.

@@ err-5031 | LMW-5031: Region is in read-only mode
During a major incident a region can be placed in read-only mode to protect
data integrity. Reads and downloads keep working, but writes, deletes and new
weave runs are refused with LMW-5031. Runs already in progress fail when they try
to write. The status page shows the affected region and an estimated recovery
time. Spools with cross-region replication can be read from the replica region
in the meantime.

@@ err-5040 | LMW-5040: Upstream timeout
The API gateway did not receive a response from an internal service in time,
usually during very large listing or copy operations. The operation may still
complete in the background. Before retrying a write, check whether it actually
happened, or rely on idempotency keys. For listings, request smaller pages with
a lower limit. Persistent LMW-5040 for the same request should be reported to
support with the request id.

@@ err-6001 | LMW-6001: Could not connect to the API endpoint
A client-side error raised by the CLI and SDKs when no connection could be
established after all retries. Typical causes are no internet connection, DNS
failing to resolve api.loomwell.dev, a firewall blocking outbound port 443, or
a proxy that is required but not configured. Run `loom doctor` to test each stage
of the connection separately. A wrong api.endpoint value is also a frequent
cause on machines that previously used the sandbox.

@@ err-6002 | LMW-6002: TLS certificate verification failed
The client could not verify the server certificate. In corporate networks this
nearly always means a proxy intercepts TLS and presents its own certificate
signed by an internal CA. Export that root certificate in PEM format and set
net.ca_bundle to its path. Outdated operating systems with expired root stores
cause the same error. The CLI has no flag to skip verification, because it would
expose your credentials.

@@ err-6010 | LMW-6010: Local clock is out of sync
Requests are signed with a timestamp, and the server rejects signatures more
than five minutes away from its own time. The CLI detects this and reports
LMW-6010 with the measured offset. Enable automatic time synchronisation on
your machine. Virtual machines resumed from suspension and containers on hosts
with drifting clocks are the usual suspects; `loom doctor` shows the current
offset.

@@ err-6020 | LMW-6020: Configuration file could not be loaded
config.toml contains invalid TOML or refers to a file that does not exist, such
as a missing net.ca_bundle path. The message gives the file, line and column.
Typical syntax mistakes are unquoted strings, Windows paths with single
backslashes inside double quotes, and duplicated table headers. Run
`loom config validate` to check the file. This is different from LMW-6021,
which is about a key name the CLI does not know.

@@ err-6021 | LMW-6021: Unknown configuration key
config.toml or a `loom config set` command uses a key that this version of the
CLI does not recognise. Usually the key is misspelled, for example
transfer.max_concurency, or belongs to an older version such as the 3.x key
parallel. In the file, unknown keys produce a warning only; with loom config set
they are an error unless --force is passed. Run `loom config list --all` to see
every valid key.

@@ err-6030 | LMW-6030: Profile not found
The profile named by --profile, LOOMWELL_PROFILE or profile use does not exist
in config.toml. Profile names are case sensitive. List existing profiles with
`loom profile ls`. In CI this often means the job sets LOOMWELL_PROFILE but the
runner image has no config file at all; in that case use LOOMWELL_TOKEN together
with LOOMWELL_PROJECT instead of a profile.

@@ err-overview | Error code format and categories
Every Loomwell error carries a code of the form LMW-NNNN in addition to the HTTP
status. The first digit gives the category: 1 for authentication and
authorisation, 2 for storage, 3 for weaves and runs, 4 for quotas, limits and
billing, 5 for server-side problems, and 6 for client-side problems detected by
the CLI or SDKs before a request is sent. API error responses are JSON objects
with code, message, request_id and an optional details object. Codes are stable
and never reused.
""")

section("auth", r"""
@@ auth-overview | Authentication methods overview
Loomwell supports four ways to authenticate. People use browser sessions,
either with email and password plus optional MFA or through single sign-on. The
CLI obtains a session with `loom login`. Machines use API tokens, which are
bearer secrets with scopes and an expiry, or workload identity federation, which
exchanges an identity token from a CI provider or cloud for a short-lived
Loomwell token without storing any secret. Service accounts are non-human
members that own tokens independently of any employee.

@@ auth-sso-saml | Setting up SAML single sign-on
SAML 2.0 single sign-on is available on Scale and Enterprise plans. In the
console open Settings, then Single sign-on, and choose SAML. Copy the Assertion
Consumer Service URL and entity ID shown there into a new application in your
identity provider, then upload the IdP metadata XML or enter its SSO URL and
signing certificate. The NameID must be the user's email address. Test the
connection with the Test login button before enabling it, so that a mistake
does not lock everyone out.

@@ auth-sso-oidc | Setting up OpenID Connect single sign-on
As an alternative to SAML, Loomwell can use any OpenID Connect provider. Register
a confidential web client in your provider with the redirect URI
https://auth.loomwell.dev/oidc/callback, then enter its issuer URL, client id
and client secret under Settings, then Single sign-on, then OIDC. The provider
must return an email claim and, if you want group-based role mapping, a groups
claim. Only one SSO connection, SAML or OIDC, can be active per organization.

@@ auth-sso-enforce | Enforcing SSO for all members
Once SSO works, owners can turn on enforcement so that members can only sign in
through the identity provider. Password logins then fail with LMW-1014, and
existing password sessions are ended within an hour. Owners keep a break-glass
password login for emergencies, and an SSO bypass list allows exceptions such as
external contractors. Enforcement does not affect API tokens, so review them
separately when someone leaves.

@@ auth-sso-groups | Mapping identity provider groups to roles
With SAML or OIDC you can assign Loomwell roles automatically from group
membership in your identity provider. Under Settings, then Single sign-on, then
Group mapping, add rules such as: members of data-eng receive Editor in the
analytics project. Mappings are evaluated at every login, so removing someone
from a group takes effect the next time they sign in; with SCIM it takes effect
within minutes. Manually assigned roles are kept unless exclusive mapping is
turned on.

@@ auth-scim | Provisioning users with SCIM
SCIM 2.0 provisioning, available on Enterprise, lets your identity provider
create, update and deactivate Loomwell users automatically. Generate a SCIM
token under Settings, then Provisioning, and enter it together with the base URL
https://api.loomwell.dev/scim/v2 in your IdP. Deactivating a user in the IdP
removes them from the organization and revokes their sessions and tokens within
five minutes. While SCIM is active, invitations and removals in Loomwell itself
are disabled.

@@ auth-mfa | Multi-factor authentication
Members can protect their accounts with an authenticator app using time-based
one-time codes, or with a hardware security key or passkey. Set it up under
Account, then Security. Owners can require MFA for everyone in the organization;
members without a second factor are asked to enrol at their next login, and
existing sessions must sign in again, which surfaces LMW-1010 in the CLI.
Recovery codes are shown once at enrolment and should be stored safely.

@@ auth-password-reset | Resetting a forgotten password
On the sign-in page choose "Forgot password" and enter your email address. The
reset link is valid for 30 minutes and can be used once. If the email does not
arrive, check spam folders and whether your organization enforces SSO, in which
case there is no Loomwell password to reset and you must sign in through your
company identity provider. Resetting the password signs you out of all browser
and CLI sessions but leaves API tokens valid.

@@ auth-account-locked | Account locked after failed sign-in attempts
After ten consecutive failed sign-in attempts an account is locked for 15
minutes to slow down password guessing; the lock lifts automatically and a
notification email is sent to the account owner. Repeated lockouts extend the
period to one hour. Resetting the password through the emailed link unlocks the
account immediately. Support cannot unlock accounts manually, but organization
owners can see lockout events in the audit log.

@@ auth-api-tokens | API tokens
API tokens are bearer credentials for scripts and integrations. Each token has
a name, an owner (a user or a service account), a set of scopes and an expiry
between one day and one year; organizations can lower the maximum under
Settings, then Security. Send the token in the Authorization header as
Bearer lmw_... . Tokens inherit at most the permissions of their owner, so a
token can never do more than the person or service account that created it.

@@ auth-token-scopes | Token scopes reference
Scopes restrict what a token may do regardless of its owner's permissions.
spool:read allows listing and downloading; spool:write adds uploads and deletes;
spool:admin covers spool settings, lifecycle rules and object lock. weave:read
allows viewing weaves and logs, weave:run starting and cancelling runs, and
weave:deploy creating revisions. billing:read, audit:read and org:admin complete
the list. A request outside the token's scopes fails with LMW-1020.

@@ auth-service-accounts | Service accounts
A service account is a non-human member used by automation, so that
integrations keep working when the employee who set them up leaves. Create one
under Settings, then Service accounts, assign it roles per project like any
member, and create tokens for it. Service accounts cannot sign in to the console
or use the CLI login flow. They do not count as seats for billing. Disabling a
service account immediately invalidates all of its tokens.

@@ auth-workload-identity | Workload identity federation for CI
Instead of storing a long-lived API token in your CI system, configure workload
identity federation: Loomwell trusts identity tokens issued by your CI provider
or cloud and exchanges them for a token valid for one hour. Create a trust
policy under Settings, then Workload identity, specifying the issuer URL and
conditions on claims such as repository and branch. In a job, run
`loom auth exchange --audience loomwell` to obtain the short-lived token.

@@ auth-ip-allowlist | Restricting access by IP address
Enterprise organizations can limit API and console access to a list of IP
addresses and CIDR ranges under Settings, then Security, then IP allowlist.
Requests from other addresses fail with LMW-1021. Owners are warned before
saving a list that does not include their current address. Runs on managed
runners are always allowed. By default presigned URLs work from any address;
enable strict mode to apply the allowlist to them as well.

@@ auth-session-length | Session lifetime settings
Browser sessions last 12 hours of inactivity and at most 7 days in total by
default. CLI sessions last 12 hours and refresh in the background for up to 30
days as long as the CLI is used. Owners can shorten both values under Settings,
then Security, for example to meet a policy that requires daily
re-authentication. Shortened lifetimes apply to new sessions; use
"Sign out everyone" to apply them immediately.
""")

section("permissions", r"""
@@ perm-roles | Built-in roles
Loomwell has five built-in roles. Owner can do everything, including deleting
the organization and managing billing. Admin manages members, roles and
settings of projects but cannot change billing or delete the organization.
Editor can create and modify spools, objects and weaves and start runs. Viewer
has read-only access to metadata, logs and objects. Billing Manager can view and
pay invoices and change the plan, without any access to data.

@@ perm-custom-roles | Creating custom roles
On Scale and Enterprise you can define custom roles from individual
permissions when built-in roles are too broad. Open Settings, then Roles, then
New role, select permissions such as spool:read, weave:run and secret:write,
and save. Custom roles can be bound to members, groups and service accounts in
any project. Changing the permissions of a custom role takes effect immediately
for everyone it is bound to. Up to 50 custom roles are allowed per organization.

@@ perm-projects | Projects and permission boundaries
Projects are the main isolation boundary in an organization. Spools, weaves,
secrets, webhooks and quotas belong to exactly one project, and roles are
granted per project. A member who is Admin in the marketing project has no
access to the finance project unless granted separately. Organization Owners
implicitly have access everywhere. Moving a spool between projects is not
possible; copy the data to a spool in the target project instead.

@@ perm-spool-policy | Spool access policies
Besides roles, individual spools can carry an access policy that grants or
denies actions for specific principals or conditions, written in JSON. Typical
uses are making one spool readable by a service account from another project,
requiring a minimum TLS version, or denying deletes to everyone except an
automation account. An explicit deny in a spool policy overrides any allow from
a role. Policies are managed with `loom spool policy set`.

@@ perm-public-access | Public read access to a spool
Spools are private by default. To serve public assets, an Admin can enable
public read access on a spool, which makes objects downloadable without
authentication at https://SPOOL.REGION.loomwell.dev/KEY. Listing stays private.
Organizations can block public access centrally, in which case the option is
greyed out. For sharing individual files for a limited time, presigned URLs are
usually the safer choice.

@@ perm-cross-project | Accessing a spool from another project
A weave in one project cannot read spools in another project by default. To
allow it, add a statement to the spool's access policy granting spool:read to
the weave's runtime identity, shown on the weave settings page as
weave:PROJECT/WEAVE. Alternatively create a service account in the data-owning
project and store its token as a secret in the consuming weave, which is simpler
but means managing a long-lived credential.

@@ perm-admin-denied | Permission denied even though I am an admin
Administrators are sometimes surprised to get LMW-1022 or LMW-1020. Check three
things. First, admin rights are per project, so confirm the project your CLI
profile points at. Second, if you are using an API token, its scopes may be
narrower than your role. Third, a spool access policy may contain an explicit
deny, which overrides roles, including Admin. `loom auth explain ACTION RESOURCE`
shows which rule allowed or denied a request.

@@ perm-audit-log | The audit log
The audit log records security-relevant events: sign-ins, token creation and
revocation, role changes, spool policy and settings changes, deletions of spools
and weaves, and billing changes. Object reads and writes are not included;
enable spool access logging for those. Each entry shows actor, action, target,
IP address and result. Owners and members with audit:read can search it in the
console or export it with `loom audit export`.

@@ perm-access-logging | Spool access logging
Access logging records every request made against a spool, including
downloads, uploads, deletes and listings, and writes the records as compressed
NDJSON files to a target spool of your choice every five minutes. Enable it with
`loom spool logging enable spool://data --target spool://access-logs/data/`.
Logs contain the principal, operation, key, bytes transferred, status and
latency. Log objects are billed as normal storage in the target spool.
""")


section("billing", r"""
@@ bill-plans | Plans and what they include
Loomwell offers four plans. Starter is free for one project with 10 GB of
storage, 500 compute credits a month and 2 concurrent runs. Team costs 49 USD a
month plus usage, allows 10 projects and 5 concurrent runs, and adds backups.
Scale costs 399 USD a month plus usage, with unlimited projects, 25 concurrent
runs, SSO, custom roles and 90-day log retention. Enterprise adds SCIM,
customer-managed keys, IP allowlists, self-hosted runners and a negotiated
commitment.

@@ bill-storage-pricing | Storage pricing by class
Storage is billed per GB-month, measured hourly and averaged over the billing
period. The hot class costs 0.021 USD per GB-month and has no retrieval fee. Cool
costs 0.011 USD, has a 30-day minimum storage duration and a retrieval fee of
0.01 USD per GB. Deep costs 0.002 USD, has a 180-day minimum and requires a
restore request that takes up to 12 hours before data can be read. Objects
deleted before the minimum duration are charged for the remaining days.

@@ bill-egress | Data transfer and egress pricing
Uploading data into Loomwell is free. Downloads to the internet are billed as
egress: the first 100 GB each month are free for the whole organization, then
0.05 USD per GB. Transfer between a spool and weave runners in the same region is
free, as are server-side copies within one region. Copies and replication
between regions cost 0.02 USD per GB. Egress through a private-link connection
is billed at a reduced rate set out in your Enterprise agreement.

@@ bill-compute | Compute credits and how runs are billed
Weave runs consume compute credits. Each step is billed per started minute at a
rate that depends on the runner size, from 1 credit per minute for small to 20
for gpu-small. Queue time is free; only execution time counts. One credit costs
0.004 USD beyond the credits included in your plan. Cancelled and failed steps
are billed for the time they ran. The run page shows the credits used by each
step.

@@ bill-invoices | Invoices and billing periods
Invoices are issued on the first day of each month for the previous month's
usage plus the next month's plan fee, and are emailed to the billing contacts as
PDF. Past invoices can be downloaded under Billing, then Invoices, by Owners and
Billing Managers. Each invoice breaks usage down by project and service. To add
a purchase order number, VAT ID or a different legal address, update the billing
profile before the invoice date; issued invoices cannot be edited.

@@ bill-payment-methods | Payment methods
Credit and debit cards are accepted on all plans and are charged automatically
when an invoice is issued. Team and Scale organizations can switch to SEPA
direct debit in supported countries. Paying by bank transfer against an invoice
with 30-day terms requires an annual commitment or the Enterprise plan. To
change the card, open Billing, then Payment method; the new card is used for the
next charge and for any outstanding invoice.

@@ bill-failed-payment | What happens when a payment fails
If a card charge fails, Loomwell retries it after 3, 7 and 14 days and emails
the billing contacts each time. Service continues normally during this period.
If the invoice is still unpaid after 21 days, the organization is suspended and
API requests return LMW-4090. Data is kept for 30 days after suspension. Paying
the outstanding amount at any point, including during suspension, restores
normal service within minutes.

@@ bill-upgrade | Upgrading your plan
Owners and Billing Managers can upgrade at any time under Billing, then Plan.
The upgrade takes effect immediately: limits rise and plan features such as SSO
become available within a minute. The difference in plan fee for the rest of the
month is charged on a pro-rata basis right away. Moving from Starter to a paid
plan requires a payment method. Usage before the upgrade is billed at the rates
of the old plan.

@@ bill-downgrade | Downgrading your plan
A downgrade takes effect at the start of the next billing period, and no
refund is given for the current one. Before downgrading, make sure your usage
fits the lower plan's limits: the console lists blockers such as too many
projects, SSO being enforced, or custom roles in use. Features unavailable on the
new plan are switched off at the change date; for example backups stop being
taken on Starter, but existing backups remain restorable until they expire.

@@ bill-cancel | Cancelling your subscription
To cancel, an Owner downgrades the organization to Starter, or deletes it
entirely under Settings, then Danger zone. Deleting the organization stops all
billing after a final invoice for usage up to that day, and schedules all data
for permanent deletion after a 14-day grace period during which the deletion can
be undone by contacting support. There are no cancellation fees on monthly
plans; annual commitments run until the end of their term.

@@ bill-spending-cap | Spending caps and budget alerts
To avoid surprises, Owners can set budget alerts and a hard spending cap under
Billing, then Spending controls. Alerts send an email and an optional webhook
when forecast or actual spend reaches thresholds such as 50, 80 and 100 percent
of a budget. A cap goes further and blocks billable operations once reached,
returning LMW-4052, while reads within a region and deletes keep working. Caps
are evaluated every few minutes, so a small overshoot is possible.

@@ bill-overage | Compute overage and credit packs
When the compute credits included in a plan are used up, paid plans continue
running weaves and bill the extra credits at 0.004 USD each on the next invoice.
Administrators who prefer a hard stop can disable overage, in which case runs are
refused with LMW-4051 until the month resets. Prepaid credit packs of 100,000 or
1,000,000 credits are cheaper than overage and remain valid for 12 months after
purchase.

@@ bill-tax | Taxes, VAT and billing address
Prices are shown excluding taxes. Loomwell charges VAT, GST or sales tax based on
the billing address of the organization. Businesses in the EU and UK can enter
a valid VAT number under Billing, then Billing profile, to have the reverse
charge applied; the number is validated automatically. Tax exemption
certificates for US states can be uploaded in the same place. Changes apply to
invoices issued after the update.

@@ bill-seats | Seats and member billing
The Team and Scale plan fees include 5 and 20 member seats respectively; each
extra member costs 12 USD a month on Team and 10 USD on Scale. Seats are counted
daily and billed pro rata. Service accounts, pending invitations and members with
only the Billing Manager role do not use a seat. Removing a member frees the seat
immediately, but the charge for the days already elapsed remains.

@@ bill-annual | Annual commitments and discounts
Scale and Enterprise customers can commit to an annual spend in exchange for a
discount between 10 and 25 percent on usage, depending on the amount. The commit
is drawn down by all usage and plan fees; if it is not fully used at the end of
the term, the remainder is invoiced. Usage above the commit is billed monthly at
the discounted rate. Commitments can be increased mid-term but not reduced.

@@ bill-usage-dashboard | Viewing current usage and costs
The Usage page in the console shows month-to-date costs and a forecast for the
month, broken down by project, service (storage, egress, compute, seats) and
spool or weave. Numbers are updated hourly. Use the export button to download
daily usage as CSV for your own cost allocation, or enable the daily usage export
to a spool. Billing Managers can see usage but not the data or weaves that caused
it.

@@ bill-refunds | Refund policy
Plan fees and usage charges are generally non-refundable. Loomwell issues
service credits rather than refunds when an availability commitment in the
service level agreement is missed; request them within 30 days of the incident
through support. Charges caused by a demonstrable billing error are corrected on
the next invoice. Accidental usage, such as a runaway weave, can be reviewed once
per organization as a goodwill gesture.

@@ bill-trial | Free trial of paid plans
New organizations can start a 14-day trial of the Scale plan from the Plan page
without entering payment details. During the trial all Scale features are
available, including SSO, with a usage allowance of 100 GB storage and 20,000
compute credits. At the end of the trial the organization returns to Starter
unless a payment method has been added; data above Starter limits becomes
read-only for 30 days.
""")

section("limits", r"""
@@ lim-objects | Object size and key limits
Objects can be up to 5 TiB. A single PUT request accepts up to 5 GiB; larger
objects must be uploaded as multipart uploads with at most 10,000 parts of 5 MiB
to 5 GiB each, the last part excepted. Keys can be up to 1024 bytes of UTF-8.
User metadata is limited to 2 KB per object, counting keys and values, and tags
to 10 per object. There is no limit on the number of objects per spool.

@@ lim-spools | Spool and project limits
Each project can contain up to 100 spools, or 5 on the Starter plan. An
organization can have 1 project on Starter, 10 on Team and an unlimited number on
Scale and Enterprise. Spool names are global within a region. Lifecycle
configurations can contain up to 100 rules per spool and access policies up to
20 KB. These limits can be raised on request for Scale and Enterprise, except
the spool naming rules.

@@ lim-rate | API rate limits
API v3 enforces a rate limit of 1,200 requests per minute per token with bursts
of up to 200 requests, applied separately to each token. API v2 used a single
limit of 600 requests per minute shared by the whole organization. Every
response includes X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset
headers. Exceeding the limit returns HTTP 429 with LMW-4029 and a Retry-After
header. Presigned URL downloads are not counted.

@@ lim-weaves | Weave and run limits
A project can contain up to 200 weaves, each with up to 100 steps. Concurrent
runs per project are limited by plan: 2 on Starter, 5 on Team, 25 on Scale. A
run can last at most 24 hours, or 72 hours on Enterprise, and the queue can hold
up to 1,000 pending runs per project. Runs beyond that are rejected. Each step
log is limited to 100 MB, after which further output is discarded with a notice
at the end of the log.

@@ lim-webhooks | Webhook limits
Each project can register up to 20 webhook endpoints, each subscribed to any
number of event types. Payloads are limited to 256 KB; larger events, such as a
batch of object notifications, are delivered as a summary with a link to fetch
the full list. Endpoints must respond within 10 seconds. Deliveries to one
endpoint are sent at most 50 at a time, and the remainder is queued.

@@ lim-request-increase | Requesting a limit increase
Many limits can be raised for Scale and Enterprise customers, including
concurrent runs, spool count, concurrent upload sessions and API rate limits.
Run `loom quota request NAME VALUE --reason TEXT` or use the Quotas page in
the console. Include the expected peak and the reason; most requests are
answered within one business day. Plan limits on Starter and Team cannot be
raised individually; upgrade to a higher plan instead.

@@ lim-free-tier | Starter plan limits in detail
The free Starter plan is meant for evaluation and small personal projects. It
includes one project, up to 5 spools, 10 GB of storage in the hot class only,
100 GB of egress a month, 500 compute credits a month, 2 concurrent runs,
small and medium runners only, 30-day log retention, and up to 3 members. There
are no backups, SSO or custom roles. Organizations inactive for 12 months are
notified and then deleted.

@@ lim-quotas-project | Project quotas as cost guardrails
In addition to plan limits, administrators can set their own quotas per project
to contain costs: maximum storage, maximum monthly compute credits and maximum
concurrent runs. When a storage quota is reached, uploads fail with LMW-4013;
when the compute quota is reached, new runs are refused until the next month.
Quotas are configured under Project settings, then Quotas, or with
`loom quota set`, and do not affect other projects.
""")

section("api", r"""
@@ api-overview | REST API overview
The Loomwell REST API is served at https://api.loomwell.dev with the version as
the first path segment, for example /v3/spools. Requests and responses use JSON,
except object uploads and downloads, which carry raw bytes. All endpoints require
HTTPS and authentication. Timestamps are RFC 3339 strings in UTC, identifiers are
opaque strings, and sizes are integers in bytes. Version v3 is current; v2 is
deprecated and will be retired on 30 September 2025.

@@ api-auth-header | Authenticating API requests
API v3 expects an API token in the Authorization header using the Bearer scheme:
Authorization: Bearer lmw_2f9c... . Tokens in query strings are rejected to keep
them out of server logs. API v2 used a custom header, X-Loom-Key, which v3 does
not accept; sending it to a v3 endpoint results in LMW-1001 because no credential
is found. Requests must also include a User-Agent identifying your integration,
which helps support trace problems.

@@ api-pagination-v3 | Pagination in API v3
List endpoints in v3 use cursor pagination. Pass limit, from 1 to 1000 with a
default of 100, and read next_page_token from the response; send it back as
page_token to fetch the next page. When next_page_token is absent, you have
reached the end. Cursors remain valid for 24 hours and produce a consistent
listing even while objects are added, although new objects may or may not
appear. Do not construct or modify tokens; they are opaque.

@@ api-pagination-v2 | Pagination in API v2 (deprecated)
List endpoints in API v2 use offset pagination with the offset and limit query
parameters, where limit is at most 200. The response contains a total field with
the overall number of items. Offset pagination becomes slow and may skip or
repeat items when the underlying listing changes between requests, which is the
main reason v3 switched to cursors. When migrating, replace offset arithmetic
with a loop over next_page_token.

@@ api-errors-format | API error response format
Failed requests return an HTTP status code and a JSON body of the form
{"error": {"code": "LMW-2002", "message": "...", "request_id": "...",
"details": {...}}}. The code is stable and suitable for programmatic handling,
while the message is meant for humans and may change. details carries
structured context, such as the missing permission or the invalid fields. API v2
returned a flat object with error_code and error_message instead.

@@ api-idempotency | Idempotency keys
POST requests in API v3 accept an Idempotency-Key header containing a unique
string, such as a UUID, chosen by the client. If a request with the same key is
received again within 24 hours, the server returns the original response instead
of performing the operation twice, which makes it safe to retry after a network
error or LMW-5040. Reusing a key with a different request body fails with HTTP
422. The SDKs generate keys automatically.

@@ api-v3-spools-list | GET /v3/spools
Lists the spools of a project. Query parameters: project (required unless the
token is bound to one project), region to filter, and the usual limit and
page_token. Each item contains name, region, created_at, default_storage_class,
versioning (enabled, suspended or disabled), object_lock_mode and usage, with
object_count and bytes refreshed about every 15 minutes. Requires spool:read.
Example: GET /v3/spools?project=analytics&region=fra-1.

@@ api-v3-spools-create | POST /v3/spools
Creates a spool. The JSON body contains name, region and optionally
default_storage_class, versioning and object_lock_mode. The request returns 201
with the spool resource, 409 with LMW-2311 when the name is taken in that region,
or 403 with LMW-4040 when object lock is requested on a plan without it. Because
spool creation is not naturally idempotent, send an Idempotency-Key header.
Requires spool:admin.

@@ api-v3-objects-put | PUT /v3/spools/{spool}/objects/{key}
Uploads an object in a single request of up to 5 GiB. The body is the raw
content. Set Content-Type as usual, x-loom-meta-NAME headers for user metadata,
x-loom-storage-class to choose the class, and x-loom-checksum-crc32c or
x-loom-checksum-sha256 to have the server verify the bytes. Use If-None-Match: *
to create the object only if the key does not exist yet. The response includes
the ETag and, on versioned spools, the version_id.

@@ api-v3-objects-get | GET /v3/spools/{spool}/objects/{key}
Downloads an object. Supports Range headers for partial downloads, for example
Range: bytes=0-1048575, and conditional requests with If-None-Match and
If-Modified-Since. Add version_id to fetch a specific version. Objects in the deep
storage class must be restored first; otherwise the request fails with HTTP 409
and a message pointing to the restore endpoint. Use HEAD on the same path to
read metadata without the body.

@@ api-v3-objects-list | GET /v3/spools/{spool}/objects
Lists objects in a spool. prefix restricts the listing to keys beginning with a
string, and delimiter, usually a slash, groups deeper keys into common_prefixes so
that the response resembles a directory listing. Results are sorted by key in
UTF-8 byte order. Set versions=true to include noncurrent versions and delete
markers. Pagination uses limit and page_token like all v3 list endpoints.

@@ api-v3-objects-delete | DELETE /v3/spools/{spool}/objects/{key}
Deletes an object. On unversioned spools the data is removed at once. On
versioned spools a delete marker is added and previous versions remain; pass
version_id to delete a specific version permanently. Deleting a key that does not
exist returns 204, not 404, so that retries are harmless. Deleting a version under
object lock returns 403 with LMW-2350. For bulk deletion use
POST /v3/spools/{spool}/objects:batchDelete with up to 1,000 keys.

@@ api-v3-multipart | Multipart upload endpoints
Multipart uploads are started with POST /v3/spools/{spool}/uploads, which
returns an upload_id. Send parts with PUT /v3/spools/{spool}/uploads/{upload_id}/parts/{n},
numbered 1 to 10,000, and finish with POST .../uploads/{upload_id}:complete
listing each part number and ETag. Abort with DELETE on the upload resource.
Parts can be uploaded in parallel and in any order. Incomplete uploads are billed
as storage until completed or aborted.

@@ api-v3-runs-create | POST /v3/weaves/{weave}/runs
Starts a run of a weave. The optional body contains revision to pin a revision,
params as a string map, and queue, which defaults to true; with queue set to
false the request fails with LMW-4031 instead of waiting when the project is at
its concurrent run limit. The response is 202 with the run resource, including
id and status queued. Poll GET /v3/runs/{id} or subscribe to webhooks to learn
the outcome. Requires weave:run.

@@ api-v3-runs-get | GET /v3/runs/{run}
Returns a run with its status, trigger, revision, timestamps, credits used and a
steps array with the status, attempt count and exit code of each step. Poll no
more than every few seconds; for long runs, webhooks are more efficient. Step
logs are not included; fetch them from GET /v3/runs/{run}/steps/{step}/logs,
which supports follow=true for streaming as server-sent events.

@@ api-v3-weaves-deploy | POST /v3/weaves/{weave}/revisions
Deploys a new revision of a weave. The body contains the weave definition either
as a YAML string in spec or as structured JSON in spec_json, and an optional
message. The server validates the definition and returns 422 with LMW-3001 or
LMW-3002 on errors, listing every problem. On success it returns 201 with the
revision number. Creating the first revision also creates the weave. Requires
weave:deploy.

@@ api-v2-objects | API v2 object endpoints (deprecated)
API v2 exposed objects under /v2/buckets/{bucket}/files/{path}, reflecting the
old naming in which spools were called buckets. Uploads used POST with a
multipart/form-data body, limited to 2 GiB, and downloads returned a redirect to
a temporary URL instead of the bytes. Metadata was sent as a JSON meta form
field. In v3 the equivalent endpoints are /v3/spools/{spool}/objects/{key}, with
raw bodies and x-loom-meta headers.

@@ api-v2-jobs | API v2 jobs endpoints (deprecated)
Before weaves, pipelines were called jobs, and API v2 offers them under
/v2/jobs. POST /v2/jobs/{id}/trigger starts an execution and GET
/v2/executions/{id} returns its state as one of pending, running, done or error.
These endpoints continue to work for weaves until v2 is retired, but they do not
expose steps, retries or artifacts. Use POST /v3/weaves/{weave}/runs and
GET /v3/runs/{run} instead.

@@ api-deprecation-v2 | API v2 deprecation timeline
API v2 was deprecated on 1 October 2024 and will be switched off on 30
September 2025. Until then it keeps working, but every v2 response carries a
Deprecation header and a Sunset header with the shutdown date. From 1 July 2025,
v2 requests may be rejected during scheduled one-hour brownouts, announced on the
status page, so that forgotten integrations surface early. The console's API
usage page lists which tokens still call v2.

@@ api-versioning | API versioning policy
Within a major API version, Loomwell only makes backwards-compatible changes:
new endpoints, new optional parameters, new fields in responses and new enum
values. Clients must ignore unknown fields. Breaking changes require a new major
version, which is supported in parallel with the previous one for at least 12
months after the deprecation announcement. Individual endpoints may be marked
deprecated with at least six months' notice.

@@ api-v3-presign | POST /v3/spools/{spool}/objects/{key}:presign
Creates a presigned URL for one object. The body contains method (GET or PUT),
expires_in seconds from 60 up to 604800, and for PUT optionally content_type and
content_length_range, which the upload must satisfy. The response contains the
url and its expiry time. The URL is signed with the calling token; revoking the
token invalidates every URL it produced. Requires spool:read for GET and
spool:write for PUT.

@@ api-v3-restore | POST /v3/spools/{spool}/objects/{key}:restore
Requests a temporary readable copy of an object stored in the deep storage
class. The body sets days, how long the restored copy remains available, from 1
to 30, and tier, either standard (up to 12 hours) or expedited (up to one hour,
higher fee). Poll the object with HEAD: the x-loom-restore header shows
ongoing-request="true" until the copy is ready. Restored copies are billed as hot
storage while they exist.

@@ api-v3-usage | GET /v3/usage
Returns billing usage for the organization or a single project, aggregated per
day or per month. Parameters are start and end dates, granularity, and
group_by, which accepts project, service, spool or weave. Amounts are given both
in units, such as GB-hours or credits, and in the billing currency. Data is
final 48 hours after the end of a day. Requires billing:read.

@@ api-v3-audit | GET /v3/audit/events
Returns audit log events for the organization, newest first, with filters for
actor, action, target and time range. Each event has id, time, actor (with type
user, service_account or system), action such as token.create, target, ip and
outcome. The endpoint is available on Scale and Enterprise and requires
audit:read. For continuous export, prefer the audit webhook or the daily export
to a spool.
""")

section("sdk", r"""
@@ sdk-py-client | Python SDK: creating a client
Create a client with `from loomwell import Client` followed by `client = Client()`.
Without arguments the client reads credentials and settings exactly like the
CLI: LOOMWELL_TOKEN first, then the active profile in config.toml. Pass
profile="staging", token=..., or region=... to override. The client holds a
connection pool and is thread-safe, so create one per process. For asyncio use
AsyncClient from loomwell.aio, which mirrors the same methods as coroutines.

@@ sdk-py-upload-file | Python SDK: spool.upload_file()
`spool.upload_file(path, key)` uploads a local file given by its path. It picks
single or multipart upload based on transfer.multipart_threshold, uploads parts
in parallel, verifies checksums and retries failed parts. Optional arguments are
metadata (a dict), storage_class, content_type and a progress callback that
receives the number of bytes sent. It returns an ObjectInfo with key, size, etag
and version_id. To upload from memory or a stream, use upload_fileobj instead.

@@ sdk-py-upload-fileobj | Python SDK: spool.upload_fileobj()
`spool.upload_fileobj(fileobj, key)` uploads from a binary file-like object, such
as an open file, io.BytesIO or a streaming response, instead of a path. Because
the total size may be unknown, it always uses a multipart upload when the stream
is larger than one chunk and buffers one chunk per worker in memory. Pass size if
you know it to allow better chunk sizing. The object must be opened in binary
mode; text streams raise TypeError.

@@ sdk-py-download | Python SDK: download_file() and download_fileobj()
`spool.download_file(key, path)` saves an object to a local path, downloading
ranges in parallel and writing to a temporary file that is renamed only when
the download is complete and verified. `spool.download_fileobj(key, fileobj)`
writes into an open binary stream sequentially, which is slower but works with
pipes and in-memory buffers. Both accept version_id. For small objects,
`spool.read_bytes(key)` returns the content directly.

@@ sdk-py-list | Python SDK: iterating over objects
`spool.iter_objects(prefix="logs/2025/")` returns a lazy iterator over every
object under a prefix, fetching pages of up to 1,000 keys behind the scenes, so
you never handle page tokens. Pass delimiter="/" to get common prefixes as
PrefixInfo items, and versions=True to include noncurrent versions. The older
list_objects method returns a single page and is deprecated since SDK 2.4
because it silently truncated results at 1,000 keys.

@@ sdk-py-weave-run | Python SDK: starting and waiting for runs
`run = client.weaves.run("nightly-etl", params={"date": "2025-03-01"})` starts a
run and returns a Run object immediately. `run.wait(timeout=3600)` blocks until
the run finishes, polling with backoff, and returns the final status; it raises
RunFailed if the run failed or timed out, with the failed steps attached.
`run.logs(step="load")` yields log lines. To react to runs without polling,
use webhooks instead.

@@ sdk-py-errors | Python SDK: exceptions
All SDK errors derive from loomwell.LoomwellError. API errors are raised as
ApiError subclasses with code, message, request_id and details attributes:
NotFound for LMW-2001 and LMW-2002, PermissionDenied for LMW-1020 and
LMW-1022, RateLimited for LMW-4029 and Conflict for LMW-2270 and LMW-2311.
Network problems raise ConnectionError with code LMW-6001. Catch specific
subclasses where you can and let unexpected errors propagate.

@@ sdk-py-retries | Python SDK: retry configuration
The Python SDK retries idempotent requests and requests with idempotency keys on
network errors, HTTP 429 and 5xx responses. Configure it with
`Client(retry=Retry(total=8, backoff_base=0.5, backoff_max=30))`. Setting
total=0 disables retries, which is useful in tests. When the server sends a
Retry-After header the SDK always waits at least that long. Retries are logged at
debug level under the loomwell.http logger.

@@ sdk-js-client | JavaScript SDK: creating a client
Import the client with `import { Loomwell } from "@loomwell/sdk"` and create it
with `const lw = new Loomwell({ token: process.env.LOOMWELL_TOKEN })`. In Node.js
the token can be omitted, and the SDK then reads the environment and config.toml
like the CLI; in browsers and edge runtimes it must be passed explicitly, because
there is no file system. All methods return promises, and list methods return
async iterators usable with for await.

@@ sdk-js-upload | JavaScript SDK: uploading objects
`await lw.spool("media").upload("clips/a.mp4", body)` uploads data from a
Buffer, Blob, ReadableStream or string. Streams of unknown length are uploaded
with multipart automatically. Pass { contentType, metadata, storageClass,
onProgress } as the third argument. For uploading directly from a browser
without exposing a token, create a presigned PUT URL on your server with
createPresignedUrl and let the browser upload to it with fetch.

@@ sdk-js-presign | JavaScript SDK: createPresignedUrl()
`await lw.spool("exports").createPresignedUrl("q3.csv", { method: "GET", expiresIn: 3600 })`
returns a URL that anyone can use until it expires. For uploads, use method PUT
and optionally contentType and maxSize, which the browser's request must match
or it is rejected. Presigned URLs do not count towards the API rate limit. They
are signed with the token of the server-side client, so use a token scoped to
the single spool involved.

@@ sdk-go-client | Go SDK: client and context usage
Create a client with `client, err := loomwell.NewClient(ctx, loomwell.WithProfile("default"))`.
Every method takes a context.Context as its first argument; cancelling the
context aborts in-flight requests and multipart uploads cleanly. Options include
WithToken, WithRegion, WithHTTPClient for custom transports and WithRetry.
Errors can be inspected with errors.As into *loomwell.APIError, whose Code field
holds the LMW code.

@@ sdk-go-upload | Go SDK: PutObject and Uploader
For small objects call `client.Spool("raw").PutObject(ctx, key, reader, opts)`,
which sends a single request and requires the reader's length to be known up to
5 GiB. For large or streaming data use `uploader := client.Spool("raw").NewUploader(loomwell.UploaderOptions{PartSize: 64 << 20, Concurrency: 16})`
and uploader.Upload, which splits the stream into parts. The Uploader reuses
buffers between parts to keep memory use predictable.

@@ sdk-pagination-helpers | Pagination helpers across SDKs
All SDKs wrap cursor pagination so you rarely handle page tokens. Python
exposes iterators such as iter_objects and iter_runs; JavaScript returns async
iterators from list methods; Go provides pager types with Next and Page methods.
If you need resumable batch processing, each SDK also exposes the raw page
token, so you can persist it and continue later, as long as it is used within
the 24-hour validity of v3 cursors.

@@ sdk-py-changelog-3 | Python SDK 3.0 beta: breaking changes
Version 3.0 of the Python SDK, currently in beta, drops support for API v2 and
Python 3.9, and removes methods deprecated during 2.x, most notably list_objects
and the legacy Bucket alias for Spool. Exceptions gain a retryable attribute.
The default number of retries increases from 5 to 8, and the default timeout for
downloads is now unlimited as long as data keeps arriving. Install the beta with
`pip install --pre loomwell`.

@@ sdk-py-changelog-26 | Python SDK 2.6.0 release notes
Python SDK 2.6.0 adds the AsyncClient in loomwell.aio, installable with the
async extra, and support for Python 3.13. upload_file now accepts a
storage_class argument, and iter_objects can return noncurrent versions. The
progress callback is called at most ten times per second to reduce overhead.
Fixed: download_file left a temporary file behind when interrupted with Ctrl-C
on Windows.
""")

section("webhooks", r"""
@@ wh-overview | Webhooks overview
Webhooks notify your systems about events in a project by sending an HTTPS POST
request to an endpoint you control. Register an endpoint under Project settings,
then Webhooks, or with `loom webhook add https://hooks.example.com/loom --events weave.run.failed,object.created`.
Each delivery contains a JSON event with id, type, created_at and data.
Endpoints must use HTTPS with a publicly trusted certificate and answer with a
2xx status within 10 seconds.

@@ wh-events | Webhook event types
Available event types include object.created and object.deleted for spool
changes; weave.run.queued, weave.run.started, weave.run.succeeded and
weave.run.failed for runs; weave.revision.deployed for deployments; backup.completed
and backup.failed; member.added, member.removed and token.created for security
events; and billing.budget_threshold for spending alerts. Use the wildcard
weave.run.* to subscribe to all run events. object.* events require enabling
notifications on each spool.

@@ wh-signature | Verifying webhook signatures
Every delivery includes a Loom-Signature header of the form t=1717171717,v1=hex,
where v1 is an HMAC-SHA256 of the timestamp, a period and the raw request body,
keyed with the endpoint's signing secret. Compute the same value and compare in
constant time, and reject deliveries whose timestamp is more than five minutes
old to prevent replays. Verify against the raw bytes, not a re-serialised JSON
object, or the signature will not match.

@@ wh-secret-rotation | Rotating a webhook signing secret
Each endpoint has a signing secret beginning with whsec_. Rotate it with
`loom webhook rotate-secret ENDPOINT_ID`. For 24 hours after a rotation,
deliveries are signed with both the old and the new secret, with two v1 values in
the Loom-Signature header, so you can deploy the new secret to your receiver
without dropping events. After 24 hours only the new secret is used.

@@ wh-retries | Webhook retries and failure handling
If your endpoint does not return a 2xx status within 10 seconds, the delivery is
retried with exponential backoff up to 12 times over roughly 48 hours. Deliveries
may therefore arrive late, more than once and out of order; use the event id to
deduplicate and created_at to order. After four consecutive days of failures the
endpoint is disabled automatically and project admins are notified by email.

@@ wh-testing | Testing webhook endpoints
Send a synthetic event to an endpoint with `loom webhook test ENDPOINT_ID --event weave.run.failed`.
The test delivery is signed like a real one and marked with "test": true. The
console's Deliveries tab shows every attempt of the last 30 days with request
headers, body, response status, response body and latency, and lets you redeliver
an event manually. During development, a tunnel to your local machine is the
easiest way to receive deliveries.

@@ wh-not-firing | Webhook is not being called
If events never reach your endpoint, check the Deliveries tab first. No entries
at all means no subscribed event occurred: object events need notifications
enabled on the spool, and event names are exact, so weave.run.fail matches
nothing. Entries with errors point to your side: TLS problems, timeouts or
non-2xx responses. A disabled endpoint shows a banner; re-enable it after fixing
the receiver. IP allowlists on your firewall must include the published sender
ranges.

@@ wh-payload | Webhook payload structure
Payloads share an envelope: {"id": "evt_...", "type": "weave.run.failed",
"created_at": "...", "project": "...", "data": {...}}. For run events, data
contains the run id, weave name, revision, status, trigger and failed step names
with exit codes. For object events, data contains spool, key, size, etag and
version_id. Payloads never contain secrets or object content. Envelope version 2
introduced the project field in platform release 2024.11.
""")

section("regions", r"""
@@ reg-list | Available regions
Loomwell runs in nine public regions: fra-1 (Frankfurt), ams-1 (Amsterdam),
dub-1 (Dublin), iad-1 (Northern Virginia), pdx-1 (Oregon), yyz-1 (Toronto),
sin-1 (Singapore), nrt-1 (Tokyo) and syd-1 (Sydney). Every region offers spools
and managed runners in all sizes except gpu-small, which is available in iad-1,
fra-1 and sin-1 only. Pricing is the same in every region. `loom region ls`
shows the list together with your measured latency.

@@ reg-choose | Choosing a region
Pick the region closest to the systems that read and write the data, since
weave runners and spools in the same region exchange data without egress
charges and with the lowest latency. Data-residency requirements come first:
customers who must keep data in the EU should choose fra-1, ams-1 or dub-1. The
region of a spool is fixed at creation; moving data later requires copying it,
which is billed as inter-region transfer.

@@ reg-residency | Data residency guarantees
Object data and backups are stored only in the region of the spool and, if you
configure it, in the replication target you choose. Weave step execution happens
in the project's region. Account metadata, such as member emails, billing
details and audit logs, is stored in the EU for organizations whose home region
is in the EU and in the US otherwise. Support staff access to customer data
requires a time-limited grant from an Owner.

@@ reg-replication | Cross-region replication
Replication copies new objects from one spool to a spool in another region
automatically, usually within 15 minutes. Configure it with
`loom spool replicate spool://prod-data --to spool://prod-data-replica`; both
spools must have versioning enabled. Deletes are replicated only when
replicate_deletes is true. Existing objects are not copied unless you request a
backfill. Replication traffic is billed at the inter-region rate of 0.02 USD per
GB.

@@ reg-move-spool | Moving a spool to a different region
A spool cannot change regions. To move data, create a spool in the target region
and copy the objects with `loom cp --recursive spool://old/ spool://new/`, which
streams data between regions without passing through your machine. For large
spools, use replication with backfill instead, so that objects written during
the copy are not missed, then switch your applications and delete the old spool.
Inter-region transfer is billed per GB.

@@ reg-launch-syd | New region: Sydney (syd-1)
The Sydney region, syd-1, became generally available in platform release
2025.05. It offers spools in all storage classes, managed runners in sizes small
to xlarge, backups and cross-region replication. GPU runners are not available in
syd-1. Customers in Australia and New Zealand who previously used sin-1 can
migrate with replication and backfill. syd-1 is also the first region with
storage hardware designed for the deep class from the start.

@@ reg-endpoints | Regional endpoints and firewall configuration
API requests go to api.loomwell.dev, which routes them to the right region based
on the spool or project. Object data can also be read directly from regional
endpoints named REGION.storage.loomwell.dev, such as fra-1.storage.loomwell.dev,
which avoids an extra hop. Firewalls need outbound HTTPS to both kinds of
hostnames. The IP ranges of each region are published as JSON at
ip-ranges.loomwell.dev and change with at least 30 days' notice.

@@ reg-status | Service status and incidents
The current status of every region and service, past incidents and scheduled
maintenance are published on status.loomwell.dev. You can subscribe by email,
RSS or webhook, per region. During incidents the page is updated at least every
30 minutes. A post-incident report is published within five business days for
every incident that affected availability or data durability.
""")

section("backups", r"""
@@bk-overview | Backups overview
Backups are point-in-time copies of a spool, stored separately from the spool so
that they survive accidental deletion of the spool, of objects, or of the whole
project. They are available on Team plans and above. A backup is incremental:
only objects that changed since the previous backup are stored again, but every
backup can be restored on its own. Backups are kept in the same region unless
you configure a backup copy region.

@@ bk-schedule | Scheduling automatic backups
Configure automatic backups with `loom backup schedule spool://finance --every 24h --at 02:00 --retain 35d`
or in the spool's Backups tab. Intervals can be hourly on Scale and Enterprise
and daily on Team. Retention is between 1 and 365 days, or 10 years on
Enterprise. A backup.completed or backup.failed webhook event is emitted after
each attempt. Changing the schedule does not affect backups that already
exist.

@@ bk-restore | Restoring a spool from a backup
To restore, pick a backup from `loom backup ls spool://finance` and run
`loom backup restore BACKUP_ID --to spool://finance-restore`. Restoring into a
new spool is recommended so you can inspect the result before switching. You
can restore only part of a backup with --prefix. The restore runs server-side and
takes roughly an hour per 5 TB; progress is shown with `loom backup status`.
Restores are billed as inter-region transfer only when the backup is in another
region.

@@ bk-vs-versioning | Backups compared with versioning
Versioning and backups both protect against accidental overwrites, but they
differ. Versioning keeps old versions inside the spool itself, so deleting the
spool or running rm --all-versions destroys them, and recovery is per object.
Backups live outside the spool, survive spool deletion and allow restoring
everything as of a point in time. For important data, use both, plus object lock
if you need protection against malicious deletion.

@@ bk-retention | Backup retention and deletion
Each backup expires after the retention period set when it was taken; changing
the schedule's retention only affects new backups. Expired backups are deleted
automatically. Deleting a spool does not delete its backups, which remain
restorable until they expire, and you keep paying for their storage. To delete
backups early, use `loom backup rm BACKUP_ID`; backups under a backup lock cannot
be deleted before expiry.

@@ bk-pricing | How backups are billed
Backup storage is billed at 0.015 USD per GB-month, counting only the unique data
stored across all backups of a spool. Because backups are incremental, a spool
whose content rarely changes costs little to back up daily. Restores within the
region are free; restores from a backup copy region are billed at the
inter-region transfer rate. The Usage page lists backup storage separately from
spool storage.

@@ bk-failed | Troubleshooting failed backups
A backup can fail when the spool is being deleted, when objects are restored
from the deep class at the same time, or when the project's backup quota is
exhausted. Failed backups emit backup.failed with a reason and are retried once
after an hour. Backups of spools with very many small objects can take longer
than the interval between them; in that case the next scheduled backup is
skipped, not queued, and a warning appears in the Backups tab.

@@ bk-lock | Backup lock for ransomware protection
Enterprise customers can enable backup lock on a schedule, which makes every
backup taken under it immutable until it expires. Nobody, including Owners and
Loomwell support, can delete locked backups or shorten their retention, and the
schedule itself cannot be removed while locked backups exist. Enabling backup
lock is irreversible for existing backups, so test retention settings before
turning it on.
""")

section("migrations", r"""
@@ mig-s3-import | Importing data from another S3-compatible object store
`loom import` copies data from any S3-compatible object store into a spool
without routing it through your machine. Create a source connection with
`loom import source add legacy --endpoint https://s3.example.net --access-key ...`,
then run `loom import start legacy:bucket-name spool://target --parallel 32`.
The import runs server-side in the target spool's region, preserves keys,
content types and user metadata, and can be resumed. Ingress is free, but the
source provider may charge for egress.

@@ mig-import-verify | Verifying an import
After `loom import` finishes, `loom import report JOB_ID` lists the number of
objects and bytes copied, skipped and failed. Objects are compared by size and,
where the source provides it, by MD5 or CRC32C. Failed objects, often caused by
keys that exceed 1024 bytes or by permissions at the source, are listed with the
reason and can be retried with `loom import retry JOB_ID`. Run a final
incremental import right before cutover to pick up late changes.

@@ mig-api-v2-v3 | Migrating from API v2 to v3
Most v2 integrations can be moved to v3 in a day. Change the base path from /v2
to /v3, replace the X-Loom-Key header with Authorization: Bearer, and rename
buckets to spools and files to objects in paths. Replace offset pagination with
page_token loops, send upload bodies raw instead of as form data, and read
errors from the nested error object. Jobs and executions become weaves and runs.
The API usage page shows which tokens still call v2.

@@ mig-cli-3-4 | Upgrading from CLI 3.x to 4.x
CLI 4.0 contains breaking changes. The configuration moved from ~/.loomrc to
~/.loomwell/config.toml, converted by `loom config migrate`. The bucket command
alias was removed; use spool. The --json flag was replaced by --output json. API
v3 is used by default, so scripts that parse v2-style output need updating. The
exit code for authentication failures changed from 1 to 3. Run both versions side
by side by installing 4.x under another name while you update scripts.

@@ mig-spec-v1-v2 | Migrating weave.yaml from version 1 to version 2
Run `loom weave migrate-spec` in a directory containing a version 1 weave.yaml to
rewrite it in place, keeping a backup as weave.v1.yaml. The command renames
depends_on to needs, moves the top-level schedule into trigger.schedule, converts
the single weave-wide machine setting into runner.size on each step, and adds
version: 2. Comments are preserved. Review the diff before deploying, especially
if you used YAML anchors, which the migrator expands.

@@ mig-jobs-weaves | Renaming: jobs became weaves, buckets became spools
In 2023 Loomwell renamed its core concepts: buckets became spools and jobs
became weaves, with executions becoming runs. The old names survive in API v2,
in CLI 3.x, where bucket was an alias of spool, and in older blog posts and
community answers. Functionality is equivalent; a bucket in old documentation is
simply a spool. The rename did not change any URLs of stored objects.

@@ mig-region-consolidation | Migrating off the retired eu-legacy region
The eu-legacy region, Loomwell's first European location, closes on 31 March
2026. Spools there must be moved to fra-1, ams-1 or dub-1. The console offers a
guided migration that sets up replication with backfill, waits until the replica
is in sync, and then swaps the spool names so that existing URIs keep working
after a short read-only window. Migration traffic out of eu-legacy is not
billed.

@@ mig-python-sdk-2 | Upgrading the Python SDK from 1.x to 2.x
Python SDK 2.0 renamed the package import from loom_sdk to loomwell and the class
Bucket to Spool, keeping Bucket as a deprecated alias. Methods that returned
lists now return iterators. Credentials are read from config.toml rather than
~/.loomrc. Exceptions moved to the loomwell.errors module with LMW codes
attached. Most code can be updated with the bundled codemod:
`python -m loomwell.codemod path/to/code`.
""")

section("release-notes", r"""
@@ rn-cli-380 | CLI 3.8.0 release notes
loom 3.8.0 introduces the presign command for generating shareable download
links and parallel uploads of multiple files in `loom cp --recursive`, controlled
by the parallel setting in ~/.loomrc. Progress bars now show transfer speed and
an estimated time remaining. Fixed: copying files whose names contain a hash
character produced keys truncated at the hash. This is the last release that
supports macOS 10.15.

@@ rn-cli-390 | CLI 3.9.0 release notes
loom 3.9.0 adds `weave logs --follow` for streaming logs and the --since filter.
The bucket alias for the spool command now prints a deprecation warning and will
be removed in 4.0. Uploads use CRC32C checksums by default instead of MD5, which
is faster on modern processors. Fixed: sync on Windows failed for paths longer
than 260 characters even when long path support was enabled.

@@ rn-cli-394 | CLI 3.9.4 release notes
loom 3.9.4 is a security release and the final version in the 3.x series.
Earlier 3.x releases created the credentials file with permissions that allowed
other local users to read it on some Linux systems. 3.9.4 creates the file with
mode 0600 and tightens existing files on first start. All 3.x users should
upgrade to 3.9.4 or move to 4.x. No new features are included.

@@ rn-cli-400 | CLI 4.0.0 release notes
loom 4.0.0 is a major release. Configuration moves to ~/.loomwell/config.toml
with profiles, and `loom config migrate` converts ~/.loomrc. API v3 is now the
default. --output replaces --json, and the bucket alias is removed. New commands:
profile, lifecycle and secret. Authentication errors now exit with code 3.
Startup time is roughly halved. See the 3.x to 4.x upgrade guide before updating
scripts.

@@ rn-cli-402 | CLI 4.0.2 release notes
loom 4.0.2 fixes issues reported after the 4.0 launch. net.ca_bundle was ignored
when net.proxy was set, causing certificate errors behind inspecting proxies.
`loom config migrate` now converts proxy settings with credentials correctly.
`loom sync` on Windows no longer re-uploads files whose names end with a space
or period. Shell completion for fish now includes profile names.

@@ rn-cli-410 | CLI 4.1.0 release notes
loom 4.1.0 adds `loom doctor` for diagnosing connectivity and configuration
problems, resumable uploads that continue after an interruption using the local
cache, and transfer.bandwidth_limit together with the --bwlimit flag. `loom run ls`
gains --status and --since filters. Downloads of large files now use parallel
range requests and are up to three times faster on high-latency links.

@@ rn-cli-412 | CLI 4.1.2 release notes
loom 4.1.2 improves the accuracy of progress bars for multipart uploads and
reduces memory use of `loom sync` on directories with millions of files by
streaming the local listing. Known issue: uploads of files larger than 10 GB may
fail at completion with LMW-2170 because the automatic chunk size adjustment
produces an undersized part; use 4.1.1 or upgrade to 4.1.3, which fixes the
problem.

@@ rn-cli-413 | CLI 4.1.3 release notes
loom 4.1.3 fixes the regression introduced in 4.1.2 in which multipart uploads of
files larger than 10 GB failed at completion with LMW-2170 due to an incorrectly
sized part. It also fixes a crash in `loom doctor` when no proxy was configured
but HTTPS_PROXY was set to an empty string. Users on 4.1.2 should upgrade
immediately.

@@ rn-cli-420 | CLI 4.2.0 release notes
loom 4.2.0 adds `loom weave rollback` to reactivate an earlier revision and
--dry-run support for sync, previewing uploads, downloads and deletions. Login
with `loom login --sso ORG` now uses the device authorization flow on headless
machines. `loom token create` accepts --scope multiple times. Windows arm64 builds
are published for the first time. The minimum supported macOS version is now 12.

@@ rn-cli-421 | CLI 4.2.1 release notes
loom 4.2.1 fixes bash completion, which printed an error about a missing
function on bash 3.2 as shipped with macOS, and corrects the --since filter of
`loom weave logs`, which interpreted durations in minutes as hours. The container
image is now also published for linux/arm64. No configuration changes are
required.

@@ rn-platform-2024-06 | Platform release 2024.06
Platform release 2024.06 makes API v3 generally available and introduces cursor
pagination for all list endpoints. Weave schema version 2 with needs and when
conditions becomes the default for new weaves. Runner sizes xlarge and gpu-small
are added, the latter in iad-1 and fra-1. Log retention on the Scale plan is
extended from 30 to 90 days.

@@ rn-platform-2024-11 | Platform release 2024.11
Platform release 2024.11 introduces webhook envelope version 2, which adds the
project field and the Loom-Signature header with timestamped HMAC signatures,
replacing the unsigned legacy format. Cross-region replication supports delete
replication. The cool storage class price drops from 0.013 to 0.011 USD per
GB-month. API v2 is formally deprecated with a shutdown date of 30 September
2025.

@@ rn-platform-2025-02 | Platform release 2025.02
Platform release 2025.02 makes object lock generally available, with governance
and compliance modes and legal holds, after a six-month preview. Backup lock for
Enterprise schedules enters preview. Workload identity federation for CI systems
is added, removing the need for long-lived tokens in pipelines. gpu-small runners
launch in sin-1. The audit log API gains filtering by target.

@@ rn-platform-2025-05 | Platform release 2025.05
Platform release 2025.05 launches the Sydney region syd-1. Spending caps join
budget alerts under Billing, allowing a hard stop when a monthly amount is
reached. Batch windows for object triggers let one run process many new objects.
The concurrent run limit for the Team plan rises from 3 to 5. Scheduled v2
brownouts are announced for July to September 2025.

@@ rn-py-250 | Python SDK 2.5.0 release notes
Python SDK 2.5.0 adds iter_runs for listing runs with automatic pagination and
a progress callback for download_file. Retries now honour the Retry-After header
from 429 and 503 responses. Deprecated: list_objects, scheduled for removal in
3.0; use iter_objects. Fixed: upload_fileobj could hang on streams that return
fewer bytes than requested without reaching the end.

@@ rn-js-sdk-4 | JavaScript SDK 4.0 release notes
Version 4.0 of @loomwell/sdk requires Node.js 18, dropping Node 16, and replaces
the internal HTTP client with the built-in fetch, which makes the package work on
edge runtimes. List methods now return async iterators instead of arrays with a
next() helper. The Bucket class is removed. Upload progress events report bytes
acknowledged by the server rather than bytes written to the socket.
""")

section("troubleshooting", r"""
@@ ts-slow-uploads | Uploads are slow
If uploads are much slower than your connection allows, first measure with
`loom doctor`, which reports throughput to the nearest region. Common fixes:
upload to a spool in a closer region; raise transfer.max_concurrency so that
more parts are in flight on high-latency links; increase
transfer.multipart_chunk_size on fast networks; and check transfer.bandwidth_limit
is not set. Antivirus software scanning each file before it is read can also slow
uploads of many small files dramatically.

@@ ts-many-small-files | Uploading millions of small files efficiently
Per-request overhead dominates when files are only a few kilobytes, so uploading
millions of them one by one is slow and costly in requests. Options: pack them
into archives such as tar or Parquet before upload, if your consumers can read
them that way; run `loom sync` with high transfer.max_concurrency, for example
64; or run the upload from a weave in the same region. Listing performance is
better when keys are spread across many prefixes.

@@ ts-sync-deleted | loom sync deleted files I wanted to keep
`loom sync` deletes destination files only when --delete is given or sync.delete
is set to true in your profile, possibly inherited from the [default] table.
Check with `loom config get sync.delete`. If the destination spool has
versioning, the deleted objects are still there as noncurrent versions and can be
brought back with `loom restore --recursive --before "2025-03-01T10:00Z"`.
Without versioning, restore from a backup if one exists. Preview future runs
with --dry-run.

@@ ts-sync-reuploads | loom sync uploads unchanged files every time
If sync transfers files that did not change, the modification times probably
differ, which happens when files are regenerated by a build, extracted from an
archive, or copied by tools that do not preserve timestamps. Switch to
sync.compare = checksum, or size-only if content changes always alter the size.
On Windows, files on network shares may report timestamps with lower precision;
CLI 4.0.2 and later tolerate a two-second difference.

@@ ts-weave-queued | Run stays in queued state
A run that stays queued is usually waiting for capacity. Check three limits: the
weave's own concurrency setting, which defaults to 1 so a new run waits for the
previous one; the project's concurrent run limit for your plan, visible with
`loom quota show`; and, for gpu-small or self-hosted pools, runner availability.
The run page shows the reason under Queue position. Runs that wait more than 30
minutes for a runner fail with LMW-3220.

@@ ts-weave-not-triggered | Scheduled weave did not run
When a scheduled run is missing, check whether the weave was paused, since paused
weaves skip schedules without queueing them. Verify the cron expression in UTC,
or the configured timezone, with `loom weave describe`, which lists the next five
planned times. Schedule slots are also skipped when the previous run is still
active and on_overlap is skip. Finally, check for LMW-4051 or LMW-4052, because
runs are not started when credits or the spending cap are exhausted.

@@ ts-object-trigger-missing | Object trigger did not start a run
If uploading an object did not start a weave, check that the key matches the
trigger's prefix and suffix exactly, including case, and that the upload
completed: multipart uploads trigger only when completed, not when the first
part arrives. Objects created by a run of the same weave do not trigger it again,
to prevent loops. If batch_window is set, the run starts only when the window
closes. Trigger evaluation is shown in the weave's Events tab.

@@ ts-step-works-locally | Step works locally but fails in the weave
Differences between your machine and a runner explain most of these failures.
Runners use the image you specify without your local environment variables,
credentials or mounted directories; pass configuration through env and secrets.
Runners are linux/amd64, so images built on ARM laptops must be multi-platform.
The workspace is /workspace, not your current directory. Outbound internet
access is allowed, but inbound connections are not.

@@ ts-permission-upload | Upload fails with a permission error
An upload can be refused even with Editor rights. Look at the LMW code: LMW-1020
means the API token lacks spool:write; LMW-1022 means the user or service account
has no role with write permission in that project; LMW-2350 means the key is
protected by object lock. A spool policy with an explicit deny, often added to
protect a production spool, also blocks writes regardless of role.

@@ ts-cert-error | Certificate errors behind a company proxy
Errors such as "x509: certificate signed by unknown authority" or LMW-6002 on a
corporate network mean the proxy is decrypting TLS traffic and re-signing it
with an internal certificate authority. Ask IT for the root certificate in PEM
format, save it, and set net.ca_bundle to its path. The Python SDK honours the
same setting. CLI 4.0.0 and 4.0.1 ignored net.ca_bundle when net.proxy was set;
upgrade to 4.0.2 or later.

@@ ts-login-loop | Browser sign-in keeps returning to the login page
A sign-in that loops back to the login page is usually caused by blocked
third-party cookies for auth.loomwell.dev, a browser extension stripping
cookies, or a system clock far off. With SSO, an IdP that sends a NameID other
than the email address, or an assertion rejected with LMW-1033 or LMW-1034,
produces the same loop. Try a private window, allow cookies for loomwell.dev, and
check the SSO test results page.

@@ ts-cli-hangs | CLI hangs without output
If a command appears to hang, run it again with -vvv to see where it stops.
Hanging at "resolving endpoint" indicates DNS problems; at "connecting" a
firewall or proxy issue, see net.connect_timeout; hanging mid-transfer points to
a stalled connection, limited by net.read_timeout. In containers without a TTY,
an interactive confirmation prompt may be waiting; add --yes. On first run after
an upgrade, the update check may be blocked by a firewall.

@@ ts-download-corrupt | Downloaded file is corrupted or incomplete
The CLI and SDKs verify checksums on download and delete the partial file when a
check fails, so corrupted results usually come from other tools. If you used a
presigned URL with a generic downloader, compare the size with the object's size
from `loom stat` and the checksum with the stored CRC32C. Interrupted downloads
with download_fileobj into a pipe cannot be verified afterwards; prefer
download_file for large objects.

@@ ts-costs-spike | Unexpected increase in the bill
To find the cause of a cost increase, open the Usage page and group by service
and then by project. Egress spikes usually come from a public spool or presigned
links shared widely, or from downloads to machines in another cloud region.
Compute spikes come from runaway schedules, retries with high counts or a larger
runner size. Storage growth is often noncurrent versions kept forever; add a
lifecycle rule. Set budget alerts to catch the next spike early.

@@ ts-429 | Getting 429 Too Many Requests
HTTP 429 with LMW-4029 means your token exceeded the rate limit of 1,200 requests
per minute. Frequent causes are scripts that list spools object by object with
HEAD requests, polling run status in a tight loop, and many parallel jobs
sharing one token. Use batch endpoints and larger page sizes, replace polling
with webhooks, give each job its own token, and honour Retry-After. A higher
limit can be requested on Scale.

@@ ts-clock-skew | Requests rejected because of clock skew
Signed requests include a timestamp, and the server rejects them when your clock
differs from the server's by more than five minutes, reported by the CLI as
LMW-6010. This often happens on laptops resumed from hibernation, on virtual
machines whose host clock drifts, and in Docker Desktop after sleep. Enable
network time synchronisation, or restart the Docker VM, and run `loom doctor` to
confirm the offset is small.

@@ ts-oom-step | Pipeline step runs out of memory
Steps that process large files often load everything into memory. When a step
is killed with LMW-3130, check the memory graph on the run page to see the peak.
Either select a larger runner, such as large with 32 GB, or change the code to
stream: read objects in ranges, process CSV row by row, or use columnar readers
that load only needed columns. Note that /workspace is a disk, so spilling
intermediate data there does not use memory.

@@ ts-deleted-spool-recover | Recovering an accidentally deleted spool
A deleted spool cannot be undeleted, and its objects and versions are gone.
Recovery is possible only from backups, which survive spool deletion until they
expire: run `loom backup ls --deleted-spools` and restore the newest backup into
a new spool. If the spool was replicated, the replica in the other region still
holds the data unless delete replication was enabled. For the future, consider a
spool policy that denies spool:delete.

@@ ts-restore-object-version | Restoring an overwritten or deleted object
On a versioned spool, every overwrite and delete keeps the previous version.
List them with `loom spool ls --versions spool://docs/contract.pdf`, then restore
one with `loom restore spool://docs/contract.pdf --version-id VERSION`, which
copies it on top as the new current version. For many files at once, use
--recursive with --before to bring a whole prefix back to its state at a point in
time. Without versioning, only backups can help.

@@ ts-webhook-signature | Webhook signature verification fails
If your receiver rejects every delivery as wrongly signed, the most common cause
is computing the HMAC over a parsed and re-serialised body instead of the raw
bytes; frameworks often parse JSON before your handler runs. Other causes are
using the secret of a different endpoint, forgetting to include the timestamp
and period in the signed string, or comparing against the whole header value
instead of the v1 part.

@@ ts-sso-new-user | New employee cannot sign in with SSO
If SSO works for others but not for a new employee, check that the user is
assigned to the Loomwell application in your identity provider. With SCIM, check
that provisioning ran and the SCIM token has not expired, which shows up as
LMW-1040 in the provisioning log. Without SCIM, just-in-time provisioning must be
enabled, otherwise users need an invitation before their first SSO login. The
email address must match exactly.

@@ ts-presigned-expired | Presigned link stopped working early
A presigned URL can fail before its expiry for several reasons. The token or
session that signed it was revoked or expired; URLs signed by a CLI session end
when that session does, at most 12 hours, regardless of --expires. The object was
overwritten, if the URL pinned a version. Or strict IP allowlisting is enabled.
For links that must last days, sign them with a long-lived API token from a
service account.

@@ ts-large-download-timeout | Large download fails halfway
Downloads of many gigabytes across continents can stall on unreliable networks
and be cut off by net.read_timeout. The CLI resumes interrupted downloads from
the cache when you rerun the same command, provided cache.max_size is not 0.
Increase net.read_timeout, download from the regional endpoint, or copy the
object first to a spool in a region close to you, since server-side cross-region
copies are much more robust than long-haul downloads.

@@ ts-weave-secret-masked | Secret values appear as asterisks in logs
Loomwell masks secret values in step logs by replacing any occurrence with
asterisks. This is intended, but can be surprising when a secret is a short
common string, such as a database named "prod", and every occurrence of that
word is masked. Use longer, random secret values and keep non-sensitive
configuration in env instead of secrets. Masking cannot be disabled.

@@ ts-step-exit-127 | Step fails with exit code 127
Exit code 127 means the shell could not find the command. The binary is not in
the image, is not on the image's PATH, or the command is a shell built-in used
without a shell. Check the image locally with the same command. When using
minimal images such as distroless, the command must be an absolute path with
arguments as a list, because there is no shell to interpret a string.
""")

section("storage", r"""
@@ st-spools | What is a spool?
A spool is a container for objects, comparable to a bucket in other storage
systems. Each spool belongs to one project and one region, has a globally unique
name within that region, and carries settings such as default storage class,
versioning, object lock, lifecycle rules, an access policy and replication.
Objects are addressed with URIs of the form spool://NAME/KEY in the CLI. There
are no real folders; slashes in keys are simply part of the name.

@@ st-classes | Storage classes: hot, cool and deep
Objects are stored in one of three classes. hot is for frequently read data and
has no retrieval fee or minimum duration. cool suits data read a few times a year,
with lower storage cost, a 30-day minimum and a per-GB retrieval fee. deep is for
archives: the lowest price, a 180-day minimum, and data must be restored before
reading, which takes up to 12 hours. Set the class per object or as a spool
default.

@@ st-versioning | Object versioning
With versioning enabled, overwriting or deleting an object keeps the previous
content as a noncurrent version, so mistakes can be undone. Enable it at creation
with --versioning or later with `loom spool update --versioning enabled`. Once
enabled, versioning can be suspended but not fully disabled. Noncurrent versions
are billed as normal storage, so combine versioning with a lifecycle rule that
deletes noncurrent versions after a number of days.

@@ st-object-lock | Object lock and retention modes
Object lock stores object versions in write-once-read-many mode. It must be
enabled when the spool is created. In governance mode, retention can be shortened
or removed by users with spool:bypass_lock; in compliance mode nobody can delete a
locked version or shorten its retention before the retain-until date. Legal holds
block deletion indefinitely until removed. Set default retention with
`loom spool update --default-retention 7y --lock-mode compliance`.

@@ st-lifecycle | Lifecycle rules
Lifecycle rules reduce storage costs automatically. A rule applies to objects
matching a prefix or tag and can transition them to cool or deep after a number
of days, expire current versions, delete noncurrent versions after a number of
days or once more than a given number exist, and abort incomplete multipart
uploads. Rules are evaluated daily. Manage them with `loom lifecycle apply`;
transitions that violate class rules are rejected with LMW-2402.

@@ st-metadata-tags | Object metadata and tags
Objects carry system metadata, such as size, content type, ETag and storage
class, and user metadata you supply at upload as key-value pairs, limited to 2 KB
in total. User metadata cannot be changed without rewriting the object. Tags are
different: up to 10 key-value pairs per object that can be updated at any time
with `loom tag set`, and that lifecycle rules and access policies can match on.

@@ st-cors | Configuring CORS for browser access
Browsers block requests from web pages to spool endpoints unless the spool allows
the page's origin through CORS. Set rules with `loom spool cors set spool://media cors.json`,
listing allowed origins, methods and headers, for example https://app.example.com
with GET and PUT. Without a rule, browser uploads to presigned URLs fail with a
CORS error in the console even though the URL itself is valid.

@@ st-consistency | Consistency model
Loomwell provides strong read-after-write consistency for all operations within a
region: once an upload, overwrite or delete returns success, every subsequent
read or listing reflects it. Replicated copies in other regions are eventually
consistent, usually within 15 minutes. Usage figures shown in spool listings are
refreshed asynchronously and can lag by around 15 minutes; that delay does not
affect data reads.

@@ st-checksums | Data integrity and checksums
Every object is stored with a CRC32C checksum, computed on upload and verified
on every read and during background scrubbing of the storage media. Clients can
additionally supply a SHA-256 checksum, which is stored and returned in the
x-loom-checksum-sha256 header. Objects uploaded as multipart have a composite
checksum derived from the part checksums, so it will not equal the checksum of
the whole file computed locally with standard tools.

@@ st-durability | Durability and availability
Objects are stored with erasure coding across three independent availability
zones in their region and are designed for eleven nines of annual durability.
The service level agreement commits to 99.95 percent monthly availability for
hot storage on Scale and Enterprise and 99.9 percent for cool and deep. Deep
objects are stored on the same durable media; only the restore step differs.
Replication to another region protects against the loss of a whole region.

@@ st-encryption | Encryption at rest and in transit
All objects, backups, logs and secrets are encrypted at rest with AES-256 using
keys managed by Loomwell and rotated yearly. All connections require TLS 1.2 or
newer. Enterprise customers can use customer-managed keys held in their own key
management service; Loomwell then requests each data key from it, and revoking
the key makes the data unreadable within minutes. Encryption cannot be turned
off.

@@ st-cmk | Customer-managed encryption keys
On Enterprise, a spool can be encrypted with a customer-managed key. Register the
key's identifier under Settings, then Encryption, grant Loomwell's service
principal permission to encrypt and decrypt with it, and select the key when
creating the spool; existing spools must be copied into a new spool to switch.
If the key is disabled or its permission revoked, reads and writes fail until
access is restored, and backups of the spool cannot be restored either.

@@ st-data-deletion | Data deletion and retention after account closure
When objects are deleted they become inaccessible immediately and the underlying
storage is reclaimed within 30 days. When an organization is deleted, all spools,
backups, logs and secrets are deleted after a 14-day grace period and erased
from storage within a further 30 days. A deletion certificate is available on
request for Enterprise customers. Audit logs required for legal reasons are kept
for the contractually agreed period.

@@ st-compliance | Compliance certifications
Loomwell holds SOC 2 Type II and ISO 27001 certifications covering all public
regions; reports are available under NDA from the Trust page. A data processing
agreement is included in the terms of service for all customers. Enterprise
customers can sign a business associate agreement for health data, which
requires customer-managed keys, access logging and a restricted set of regions.
Penetration test summaries are shared annually.
""")

section("cli", r"""
@@ cli-stat | loom stat
Prints the metadata of one object without downloading it: size, content type,
ETag, CRC32C checksum, storage class, version id, creation time, user metadata
and tags. For objects in the deep class it also shows the restore status and,
while a restored copy exists, when it expires. `loom stat spool://raw/a.csv --output json`
is handy in scripts that need to check whether an object exists; a missing key
exits with code 1 and prints LMW-2002.

@@ cli-restore | loom restore
Brings back previous versions of objects on a versioned spool. With --version-id
it copies one specific version on top of the key as the new current version. With
--recursive and --before TIMESTAMP it restores every object under a prefix to its
state at that moment, removing delete markers added afterwards. The command never
deletes history; restoring creates new versions. It is unrelated to restoring
objects from the deep storage class, which uses `loom thaw`.

@@ cli-thaw | loom thaw
Requests a temporary readable copy of objects stored in the deep class. Run
`loom thaw spool://archive/2019/ --recursive --days 7` to restore everything under
a prefix for seven days, or add --expedited for restoration within about an hour
at a higher retrieval fee. The command returns immediately; check progress with
`loom stat`, or pass --wait. Downloading a deep object before the thaw completes
fails with HTTP 409.

@@ cli-multipart | loom multipart ls and loom multipart abort
Lists and cleans up multipart uploads that were started but never completed,
for example because an upload script crashed. `loom multipart ls spool://raw`
shows each upload with key, start time, number of parts and bytes so far.
`loom multipart abort --older-than 24h spool://raw` aborts stale uploads and
frees their storage. Incomplete uploads count towards storage billing and
towards the limit of concurrent upload sessions.

@@ cli-spool-update | loom spool update
Changes settings of an existing spool: default storage class with --class,
versioning with --versioning enabled|suspended, default object lock retention
with --default-retention, public read access with --public-read, and tags on the
spool itself. Settings that are fixed at creation, namely the name, the region
and whether object lock is available at all, cannot be changed; attempting to do
so prints which option requires creating a new spool.

@@ cli-weave-describe | loom weave describe
Shows everything about a deployed weave: current revision and its deploy message,
triggers with the next five scheduled times, whether the weave is paused,
concurrency settings, secrets referenced, runner sizes per step and the status of
the last ten runs. It is the quickest way to confirm that a cron expression fires
when you expect, because the times are shown both in UTC and in your local
timezone.

@@ cli-whoami | loom auth whoami
Prints who the CLI is authenticated as: user or service account, organization,
default project, and where the credential came from, such as the LOOMWELL_TOKEN
environment variable, a profile session or a flag. For tokens it also lists the
scopes and the expiry date. This is the first thing to run when a command fails
with an authentication or permission error that you did not expect.

@@ cli-webhook | loom webhook commands
`loom webhook add URL --events LIST` registers an endpoint and prints its signing
secret once. `loom webhook ls` shows endpoints with their subscribed events,
status and recent failure rate. `loom webhook update ID --events ...` changes the
subscription, `loom webhook disable ID` pauses deliveries without losing the
configuration, and `loom webhook rm ID` deletes it. Testing and secret rotation
have their own subcommands, test and rotate-secret.
""")

section("organization", r"""
@@ org-create-project | Creating and organizing projects
Create a project under Settings, then Projects, or with
`loom project create analytics --region fra-1`. The region is the default for
new spools and the location where the project's weaves run. Project slugs must
be unique within the organization and can be renamed later without breaking
spool URIs, since spools are addressed by their own names. Common layouts use one
project per environment, such as dev, staging and prod, or one per team.

@@ org-delete-project | Deleting a project
Only Owners and project Admins can delete a project, and only once it contains no
spools; delete or empty them first. Weaves, secrets, webhooks and tokens bound to
the project are deleted with it, and running runs are cancelled. Backups of spools
that belonged to the project remain until they expire. Deleted projects cannot be
restored, and their slug becomes available again immediately.

@@ org-transfer-ownership | Transferring organization ownership
An organization must always have at least one Owner. To hand over ownership, for
example when the founder of an account leaves the company, an existing Owner
promotes another member to Owner under Settings, then Members, and can then leave
or be demoted. If the only Owner is unreachable, support can transfer ownership
after verifying the request with a signed letter on company letterhead and a
match with the billing details.

@@ org-rename | Renaming an organization
Owners can change the organization's display name at any time under Settings,
then General. The organization slug, used in SSO login URLs and in
`loom login --sso`, can be changed once every 30 days; the old slug redirects for
90 days. If you use SAML, update the ACS URL in your identity provider after
changing the slug, otherwise logins fail after the redirect period ends.

@@ org-support-plans | Support plans and response times
All customers can use the community forum and documentation. Team plans include
email support with a first response within two business days. Scale includes
responses within eight business hours and within four hours for production
outages. Enterprise adds 24/7 phone support with a one-hour response for critical
incidents and a named technical account manager. Response times are targets,
except on Enterprise, where they are contractual.

@@ org-contact-support | Opening a support ticket
Open tickets from the Help menu in the console or with `loom support ticket`,
which attaches the output of `loom doctor --share` when you agree. Include the
request ids of failing calls, the LMW codes, the CLI or SDK version and the time
of the problem with timezone. For outages, select the production impact level so
the ticket is routed to the on-call team. Support will never ask for your
password or API token.

@@ org-sla | Service level agreement
The service level agreement applies to Scale and Enterprise customers. It covers
the API, hot storage and managed weave runners, with monthly availability targets
of 99.95 percent, and 99.9 percent for cool and deep storage. If availability
falls below the target, the customer receives service credits between 10 and 30
percent of the affected month's fees. Scheduled maintenance announced seven days
ahead and problems caused by customer configuration are excluded.

@@ org-notifications | Email notification preferences
Each member chooses which emails they receive under Account, then Notifications:
run failures of weaves they deployed, weekly usage summaries, security alerts,
product announcements and maintenance notices. Security alerts, such as new
sign-ins from unknown devices or tokens created on their behalf, cannot be
disabled. Owners can additionally route billing and quota notices to a shared
address, such as a finance mailbox.
""")

section("integrations", r"""
@@ int-metrics | Exporting metrics to your monitoring system
Loomwell exposes project metrics in the OpenMetrics text format at
https://api.loomwell.dev/v3/metrics, which any compatible monitoring system can
scrape with an API token that has the metrics:read scope. Metrics include spool
bytes and object counts, request rates and error rates per spool, run counts and
durations per weave, queue length and credits consumed. Values are updated every
60 seconds; scraping more often returns cached data.

@@ int-notify-action | Sending run notifications to chat
The built-in loom/notify action posts a message to a chat webhook URL, such as an
incoming webhook of your team chat tool, from inside a weave. Add it as a step
with when: on_failure to alert on failures, passing the URL as a secret. The
message can use variables such as the weave name, run id and the names of failed
steps. For notifications outside weaves, subscribe a webhook endpoint to
weave.run.failed instead.

@@ int-dbt | Running dbt projects in a weave
To run dbt transformations, scaffold a weave with `loom weave init --template dbt`.
The template installs dbt in the step image, caches the packages directory
between runs, reads the warehouse credentials from secrets, and publishes the
generated documentation and run results as artifacts. Schedule it after your
ingestion weave by triggering on the object that the ingestion writes when it
finishes, rather than guessing a time.

@@ int-terraform | Managing Loomwell with infrastructure as code
The Loomwell provider for infrastructure-as-code tools manages projects, spools,
lifecycle rules, access policies, webhooks, service accounts and role bindings
declaratively. Weave definitions can be deployed with it too, although most teams
deploy weaves from CI with `loom weave deploy` instead. Existing resources can be
imported by id. The provider authenticates with LOOMWELL_TOKEN and respects the
same rate limits as any other API client.

@@ int-static-site | Can I host a static website on a spool?
Spools are not web servers: they do not serve index documents for directory
paths, custom error pages or redirects. You can still serve static assets,
such as images or downloadable files, from a spool with public read access, and
place a content delivery network in front of it using the spool's public URL as
the origin. For complete websites, use a dedicated static hosting service and
keep large media in a spool.
""")

_REC = re.compile(r"^@@\s*(\S+)\s*\|\s*(.+?)\s*$")


def parse_docs() -> list[dict]:
    docs = []
    for sec, body in SECTIONS:
        cur = None
        for line in body.splitlines():
            m = _REC.match(line)
            if m:
                cur = {"key": m.group(1), "section": sec, "title": m.group(2), "lines": []}
                docs.append(cur)
            elif cur is not None:
                cur["lines"].append(line)
            elif line.strip():
                raise ValueError(f"text outside a record in section {sec}: {line!r}")
    for d in docs:
        d["text"] = " ".join(" ".join(d.pop("lines")).split())
    return docs


# ---------------------------------------------------------------------------
# Queries. Q(text, judgments, tags, pop):
#   judgments: "doc-key:grade ..." (3 answers fully, 2 highly relevant,
#              1 partially relevant, 0 judged non-relevant confuser)
#   tags:      intent tag (exact-match | semantic) plus optional extra tags;
#              "short"/"long"/"question" are added automatically.
#   pop:       popularity band used to derive frequency: H1, H2, ... head (in
#              that order), T torso,
#              M middle, "" long tail.
# ---------------------------------------------------------------------------

QUERIES: list[dict] = []


def Q(text: str, judgments: str, tags: str, pop: str = "") -> None:
    if not re.fullmatch(r"H[0-9]+|T|M|", pop):
        raise ValueError(f"bad popularity band {pop!r} for {text!r}")
    rel = {}
    for item in judgments.split():
        key, grade = item.rsplit(":", 1)
        if key in rel:
            raise ValueError(f"duplicate judgment {key} in {text!r}")
        rel[key] = int(grade)
    QUERIES.append({"text": text, "rel": rel, "tags": tags.split(), "pop": pop})


# --- exact-match: error codes ----------------------------------------------
Q("LMW-4031", "err-4031:3 wv-concurrency:2 lim-weaves:1 api-v3-runs-create:1 err-4032:0", "exact-match", "T")
Q("LMW-4032 too many upload sessions", "err-4032:3 cli-multipart:2 cfg-transfer-max-concurrency:1 err-4031:0", "exact-match")
Q("what does LMW-2170 mean", "err-2170:3 rn-cli-413:2 rn-cli-412:2 cfg-transfer-multipart-chunk-size:1 err-2107:0", "exact-match", "M")
Q("LMW-2107", "err-2107:3 lim-objects:1 api-v3-objects-put:1 err-2170:0", "exact-match")
Q("LMW-2207", "err-2207:3 cfg-transfer-checksum:2 st-checksums:1 err-2270:0", "exact-match", "M")
Q("LMW-2270 error", "err-2270:3 api-v3-objects-put:1 err-2207:0", "exact-match")
Q("LMW-1033", "err-1033:3 auth-sso-saml:1 ts-login-loop:1 err-1034:0", "exact-match")
Q("LMW-1034 saml", "err-1034:3 ts-login-loop:1 err-1033:0 auth-sso-saml:1", "exact-match")
Q("LMW-3105", "err-3105:3 wv-timeout:2 wv-retries:1 err-3106:0", "exact-match", "M")
Q("LMW-3106", "err-3106:3 wv-timeout:2 lim-weaves:1 err-3105:0", "exact-match")
Q("LMW-3001", "err-3001:3 wv-validate:2 err-3301:1 err-3002:0", "exact-match")
Q("LMW-3002 weave.yaml", "err-3002:3 wv-validate:2 wv-spec-v2:1 err-3001:0", "exact-match")
Q("LMW-4051", "err-4051:3 bill-overage:2 bill-compute:1 err-4052:0", "exact-match", "M")
Q("LMW-4052", "err-4052:3 bill-spending-cap:2 ts-weave-not-triggered:1 err-4051:0", "exact-match")
Q("LMW-6021", "err-6021:3 cli-config:2 err-6020:0", "exact-match")
Q("LMW-6020 config", "err-6020:3 cfg-net-ca-bundle:1 cfg-file:1 err-6021:0", "exact-match")
Q("LMW-1020", "err-1020:3 auth-token-scopes:2 perm-admin-denied:1 ts-permission-upload:1 err-1022:0", "exact-match", "M")
Q("LMW-1022 permission denied", "err-1022:3 perm-admin-denied:2 ts-permission-upload:1 err-1020:0", "exact-match", "M")
Q("LMW-2002", "err-2002:3 cli-stat:1 ts-restore-object-version:1 err-2001:0", "exact-match", "M")
Q("LMW-2001", "err-2001:3 reg-choose:1 err-2002:0", "exact-match")
Q("LMW-4090", "err-4090:3 bill-failed-payment:2", "exact-match")
Q("LMW-5031", "err-5031:3 reg-status:1 reg-replication:1 err-5030:0", "exact-match")
Q("LMW-5030", "err-5030:3 reg-status:1 err-5031:0", "exact-match")
Q("LMW-6010", "err-6010:3 ts-clock-skew:3 inst-requirements:1", "exact-match")
Q("LMW-3210", "err-3210:3 wv-secrets:2 cli-secret:2", "exact-match")
Q("LMW-3220 runner", "err-3220:3 wv-self-hosted:2 ts-weave-queued:2 wv-runners:1", "exact-match")
Q("LMW-2350", "err-2350:3 st-object-lock:2 cli-rm:1 api-v3-objects-delete:1", "exact-match")
Q("LMW-2304", "err-2304:3 cli-spool-rm:2 cli-multipart:1", "exact-match")
Q("LMW-1040", "err-1040:3 auth-scim:2 ts-sso-new-user:2", "exact-match")
Q("LMW-1014", "err-1014:3 auth-sso-enforce:2", "exact-match")
Q("LMW-4013", "err-4013:3 lim-quotas-project:2 lim-free-tier:1", "exact-match")
Q("LMW-2402", "err-2402:3 st-lifecycle:1 st-classes:1", "exact-match")
Q("LMW-3404", "err-3404:3 wv-artifacts:2", "exact-match")
Q("LMW-2311", "err-2311:3 cli-spool-create:1 api-v3-spools-create:1", "exact-match")
Q("LMW-5040", "err-5040:3 api-idempotency:1", "exact-match")
Q("LMW-1021", "err-1021:3 auth-ip-allowlist:2", "exact-match")
Q("LMW-6030", "err-6030:3 cli-profile:2", "exact-match")
Q("LMW-4040", "err-4040:3 bill-upgrade:1 bill-plans:1", "exact-match")
Q("LMW-3301", "err-3301:3 wv-triggers-schedule:2", "exact-match")
Q("LMW-4029", "err-4029:3 ts-429:2 lim-rate:2", "exact-match", "H5")
Q("LMW-1002", "err-1002:3 cli-login:1 err-1001:0", "exact-match", "T")
Q("LMW-1010", "err-1010:3 auth-mfa:2", "exact-match")
Q("LMW-2501 key", "err-2501:3 lim-objects:1", "exact-match")
Q("LMW-3130", "err-3130:3 ts-oom-step:2 wv-runners:1", "exact-match", "M")
Q("LMW-6002", "err-6002:3 ts-cert-error:2 cfg-net-ca-bundle:2 inst-proxy:1", "exact-match", "M")

# --- exact-match: config keys, fields, flags, identifiers ------------------
Q("transfer.multipart_chunk_size", "cfg-transfer-multipart-chunk-size:3 cfg-transfer-multipart-threshold:1 lim-objects:1 err-2170:1", "exact-match")
Q("multipart_threshold default value", "cfg-transfer-multipart-threshold:3 cfg-transfer-multipart-chunk-size:1 cli-cp:1 err-2107:1", "exact-match")
Q("net.read_timeout", "cfg-net-read-timeout:3 ts-large-download-timeout:2 cfg-net-connect-timeout:0", "exact-match")
Q("net.connect_timeout", "cfg-net-connect-timeout:3 ts-cli-hangs:1 cfg-net-read-timeout:0", "exact-match")
Q("net.ca_bundle", "cfg-net-ca-bundle:3 ts-cert-error:2 inst-proxy:2 err-6002:1", "exact-match")
Q("net.max_retries", "cfg-net-max-retries:3 sdk-py-retries:1 wv-retries:0", "exact-match")
Q("sync.delete", "cfg-sync-delete:3 cli-sync:2 ts-sync-deleted:2", "exact-match")
Q("sync.compare", "cfg-sync-compare:3 ts-sync-reuploads:2 cli-sync:1", "exact-match")
Q("cache.dir", "cfg-cache-dir:3 cfg-cache-max-size:1 wv-cache:0", "exact-match")
Q("cli.update_check", "cfg-cli-update-check:3 inst-upgrade:1 inst-offline:1", "exact-match")
Q("--bwlimit", "cfg-transfer-bandwidth-limit:3 rn-cli-410:1", "exact-match")
Q("api.version", "cfg-api-version:3 api-deprecation-v2:1 cfg-api-endpoint:0 api-versioning:0", "exact-match")
Q("LOOMWELL_PROFILE", "cfg-env-vars:3 cli-profile:2 err-6030:1 cfg-file:1", "exact-match")
Q("retry_backoff_max", "wv-retries:3 cfg-net-max-retries:0 sdk-py-retries:0", "exact-match")
Q("on_overlap: skip", "wv-concurrency:3 ts-weave-not-triggered:1", "exact-match")
Q("batch_window", "wv-triggers-object:3 rn-platform-2025-05:1 ts-object-trigger-missing:1", "exact-match")
Q("retry_on_timeout", "wv-retries:3 err-3105:2 sdk-py-retries:0", "exact-match")
Q("fail_if_queued", "err-4031:3 wv-concurrency:2", "exact-match")
Q("abort_incomplete_uploads_after", "err-4032:3 st-lifecycle:2 cli-multipart:1 api-v3-multipart:1", "exact-match")
Q("loom weave rollback", "cli-weave-rollback:3 rn-cli-420:1", "exact-match", "T")
Q("loom doctor --share", "cli-doctor:3 org-contact-support:2 rn-cli-410:1", "exact-match")
Q("loom thaw --expedited", "cli-thaw:3 api-v3-restore:2 cli-restore:0", "exact-match")
Q("loom multipart abort", "cli-multipart:3 err-4032:2 err-2304:1", "exact-match")
Q("loom config migrate", "cfg-migrate-loomrc:3 mig-cli-3-4:2 rn-cli-400:1", "exact-match")
Q("loom weave migrate-spec", "mig-spec-v1-v2:3 wv-spec-v2:2", "exact-match")
Q("--lock-mode compliance", "st-object-lock:3 cli-spool-create:2 err-2350:1 rn-platform-2025-02:1", "exact-match")
Q("loom auth exchange", "auth-workload-identity:3 auth-overview:1 rn-platform-2025-02:1", "exact-match")
Q("X-Loom-Key header", "api-auth-header:3 mig-api-v2-v3:2", "exact-match")
Q("Idempotency-Key", "api-idempotency:3 api-v3-spools-create:1", "exact-match")
Q("next_page_token", "api-pagination-v3:3 cli-output-json:1 sdk-pagination-helpers:1 api-pagination-v2:0", "exact-match")
Q("Loom-Signature", "wh-signature:3 wh-secret-rotation:2 ts-webhook-signature:2", "exact-match")
Q("whsec_", "wh-secret-rotation:3 wh-signature:1", "exact-match")
Q("POST /v3/weaves/{weave}/runs", "api-v3-runs-create:3 api-v2-jobs:1 api-v3-weaves-deploy:0", "exact-match")
Q("objects:batchDelete", "api-v3-objects-delete:3", "exact-match")
Q("x-loom-restore", "api-v3-restore:3 cli-thaw:1 cli-restore:0", "exact-match")
Q("upload_fileobj", "sdk-py-upload-fileobj:3 sdk-py-upload-file:1 rn-py-250:1", "exact-match")
Q("download_fileobj", "sdk-py-download:3 ts-download-corrupt:1", "exact-match")
Q("iter_objects", "sdk-py-list:3 sdk-pagination-helpers:2 sdk-py-changelog-26:1 rn-py-250:1", "exact-match")
Q("list_objects deprecated", "sdk-py-list:3 rn-py-250:2 sdk-py-changelog-3:2", "exact-match")
Q("loomwell.NewClient", "sdk-go-client:3 inst-gosdk:2", "exact-match")
Q("createPresignedUrl", "sdk-js-presign:3 sdk-js-upload:1 cli-presign:1", "exact-match")
Q("go.loomwell.dev/sdk/v3", "inst-gosdk:3 sdk-go-client:1", "exact-match")
Q("spool:bypass_lock", "st-object-lock:3 err-2350:2", "exact-match")
Q("metrics:read", "int-metrics:3 auth-token-scopes:0", "exact-match")
Q("exit code 127", "ts-step-exit-127:3 err-3120:2 cli-exit-codes:0", "exact-match")
Q("loom exit code 3", "cli-exit-codes:3 mig-cli-3-4:1 rn-cli-400:1", "exact-match")
Q("~/.loomrc", "cfg-migrate-loomrc:3 mig-cli-3-4:2 cfg-file:2 rn-cli-400:1", "exact-match")
Q("If-None-Match: *", "api-v3-objects-put:3 api-v3-objects-get:1 err-2270:1", "exact-match")
Q("weave:deploy scope", "auth-token-scopes:3 cli-token:1 api-v3-weaves-deploy:1", "exact-match")
Q("LOOM_TRIGGER_KEY", "wv-triggers-object:3 wv-env:0", "exact-match")

# --- exact-match: versions, releases, named regions -------------------------
Q("loom 4.1.3", "rn-cli-413:3 rn-cli-412:1 inst-upgrade:1", "exact-match")
Q("CLI 4.0.2 changelog", "rn-cli-402:3 ts-cert-error:1 rn-cli-400:0", "exact-match")
Q("3.9.4", "rn-cli-394:3 rn-cli-390:0", "exact-match")
Q("what's new in 4.2.0", "rn-cli-420:3 rn-cli-421:1 cli-weave-rollback:1", "exact-match")
Q("platform release 2024.11", "rn-platform-2024-11:3 wh-payload:1 api-deprecation-v2:1 rn-platform-2025-02:0", "exact-match")
Q("2025.02", "rn-platform-2025-02:3 rn-platform-2025-05:0", "exact-match")
Q("python sdk 2.6.0", "sdk-py-changelog-26:3 rn-py-250:0", "exact-match")
Q("syd-1", "reg-launch-syd:3 reg-list:2 rn-platform-2025-05:1", "exact-match")
Q("gpu-small", "wv-runners:3 reg-list:2 err-3220:1 rn-platform-2025-02:1", "exact-match")
Q("eu-legacy", "mig-region-consolidation:3", "exact-match")
Q("loom 3.8.0", "rn-cli-380:3 rn-cli-390:0 rn-cli-394:0", "exact-match")
Q("@loomwell/sdk 4.0", "rn-js-sdk-4:3 inst-jssdk:1 rn-cli-400:0", "exact-match")

# --- semantic: the user's own words -----------------------------------------
Q("how do I install the command line tool on my mac", "inst-macos:3 inst-requirements:1 inst-linux:0", "semantic", "H2")
Q("put the cli on an ubuntu server", "inst-linux:3 inst-requirements:1 inst-macos:0", "semantic", "T")
Q("windows says the command isn't recognized right after I installed it", "inst-windows:3", "semantic")
Q("I forgot my password and can't get into my account", "auth-password-reset:3 auth-account-locked:1 err-1014:1", "semantic", "H3")
Q("how much does it cost", "bill-plans:3 bill-storage-pricing:2 bill-compute:1 bill-egress:1", "semantic short", "H4")
Q("my pipeline got killed because it used too much RAM", "err-3130:3 ts-oom-step:3 wv-runners:2", "semantic", "T")
Q("stop a nightly job from running for a while without deleting it", "cli-weave-pause:3 ts-weave-not-triggered:1", "semantic")
Q("undo a bad pipeline deployment", "cli-weave-rollback:3 cli-weave-deploy:1", "semantic", "M")
Q("someone overwrote an important file, can I get the old one back", "ts-restore-object-version:3 cli-restore:2 st-versioning:2 bk-restore:1 bk-vs-versioning:1", "semantic", "T")
Q("I accidentally removed a whole storage bucket", "ts-deleted-spool-recover:3 bk-restore:2 bk-overview:1 cli-spool-rm:0", "semantic")
Q("send a file to a customer who has no account, and the link should stop working after a while", "cli-presign:3 api-v3-presign:2 sdk-js-presign:1 perm-public-access:1 ts-presigned-expired:1", "semantic", "M")
Q("our company network intercepts https and the tool complains about certificates", "ts-cert-error:3 cfg-net-ca-bundle:2 err-6002:2 inst-proxy:2", "semantic")
Q("make the command line tool go through the office proxy server", "inst-proxy:3 cfg-net-proxy:3 ts-cert-error:1", "semantic")
Q("upload speed is terrible", "ts-slow-uploads:3 cfg-transfer-max-concurrency:1 ts-many-small-files:1", "semantic", "H8")
Q("don't want big uploads to hog the whole office internet connection", "cfg-transfer-bandwidth-limit:3 ts-slow-uploads:0", "semantic")
Q("the job is waiting forever and never actually starts", "ts-weave-queued:3 err-3220:1 wv-concurrency:1", "semantic", "M")
Q("my scheduled pipeline didn't fire last night", "ts-weave-not-triggered:3 cli-weave-describe:1 wv-triggers-schedule:1", "semantic", "T")
Q("kick off processing automatically whenever a new csv file lands", "wv-triggers-object:3 ts-object-trigger-missing:1", "semantic")
Q("keep the database password out of the pipeline file", "wv-secrets:3 cli-secret:2 wv-env:1", "semantic")
Q("cheapest way to keep old archives we almost never look at", "st-classes:3 bill-storage-pricing:2 st-lifecycle:1 cli-thaw:1", "semantic")
Q("automatically move old logs to cheaper storage after a month", "st-lifecycle:3 cli-lifecycle:3 st-classes:1 cfg-log-file:0 perm-access-logging:0", "semantic")
Q("make sure nobody can delete records for seven years because of regulators", "st-object-lock:3 cli-spool-create:1 bk-lock:1 st-compliance:1", "semantic")
Q("protect our backups against ransomware", "bk-lock:3 st-object-lock:1 bk-vs-versioning:1", "semantic")
Q("let staff sign in with the company identity provider", "auth-sso-saml:3 auth-sso-oidc:3 auth-overview:1 auth-sso-enforce:1 auth-sso-groups:1", "semantic", "H9")
Q("remove access automatically when employees leave the company", "auth-scim:3 auth-sso-groups:1 cli-members:1", "semantic")
Q("give our CI system access without storing a long-lived secret", "auth-workload-identity:3 auth-service-accounts:1 rn-platform-2025-02:1", "semantic")
Q("a robot account for automation that isn't tied to a real person", "auth-service-accounts:3 auth-api-tokens:1", "semantic")
Q("create a key for a script that can only read, not delete", "auth-token-scopes:3 cli-token:2 auth-api-tokens:1", "semantic", "M")
Q("who changed the permissions last week", "perm-audit-log:3 cli-audit:2 api-v3-audit:1", "semantic")
Q("see every time someone downloads a file", "perm-access-logging:3 perm-audit-log:1", "semantic")
Q("I'm an administrator but still get access denied", "perm-admin-denied:3 err-1022:2 err-1020:1", "semantic", "M")
Q("the card payment was declined, what happens now", "bill-failed-payment:3 bill-payment-methods:1 err-4090:1", "semantic")
Q("stop paying and close my account", "bill-cancel:3 bill-downgrade:2 st-data-deletion:1", "semantic", "H10")
Q("put a ceiling on monthly spend so the bill can't explode", "bill-spending-cap:3 err-4052:1 ts-costs-spike:1 lim-quotas-project:2", "semantic")
Q("why is my bill so high this month", "ts-costs-spike:3 bill-usage-dashboard:2 bill-egress:1", "semantic", "T")
Q("can I get my money back", "bill-refunds:3 org-sla:1 bill-downgrade:1", "semantic")
Q("add our company tax number to invoices", "bill-tax:3 bill-invoices:2", "semantic")
Q("can we pay by wire transfer instead of a credit card", "bill-payment-methods:3 bill-annual:1", "semantic")
Q("do bot accounts count as paid users", "bill-seats:3 auth-service-accounts:2", "semantic")
Q("try the premium features before paying", "bill-trial:3 bill-upgrade:1 err-4040:1", "semantic")
Q("what is the biggest file I can store", "lim-objects:3 err-2107:1 api-v3-objects-put:1 cfg-transfer-multipart-threshold:1", "semantic", "M")
Q("too many requests error while listing everything", "ts-429:3 err-4029:3 lim-rate:2 sdk-py-retries:1", "semantic", "T")
Q("what do I get without paying anything", "lim-free-tier:3 bill-plans:2 bill-trial:1", "semantic", "T")
Q("get a message in our team chat when a pipeline fails", "int-notify-action:3 wh-events:2 wh-overview:1 org-notifications:1 wv-conditions:1", "semantic")
Q("my endpoint isn't receiving any events", "wh-not-firing:3 wh-testing:2 wh-retries:1", "semantic")
Q("how can I check that a callback really comes from you", "wh-signature:3 ts-webhook-signature:2 wh-secret-rotation:1", "semantic")
Q("the same notification arrived at my server twice", "wh-retries:3 wh-payload:1", "semantic")
Q("keep all our data inside europe", "reg-residency:3 reg-choose:2 reg-list:1", "semantic")
Q("copy data to a second location automatically for disaster recovery", "reg-replication:3 st-durability:1 reg-move-spool:1 bk-overview:1", "semantic")
Q("move my storage from Virginia to Frankfurt", "reg-move-spool:3 reg-replication:1 reg-list:1", "semantic")
Q("is the service down right now", "reg-status:3 err-5030:1", "semantic", "T")
Q("how often should backups run and how long should we keep them", "bk-schedule:3 bk-retention:2 bk-overview:1", "semantic")
Q("do I need backups if old versions are already kept", "bk-vs-versioning:3 st-versioning:1 bk-overview:1", "semantic")
Q("move everything over from our old S3-compatible storage provider", "mig-s3-import:3 mig-import-verify:1", "semantic")
Q("our old scripts call /v2 endpoints, what do we need to change", "mig-api-v2-v3:3 api-deprecation-v2:2 api-pagination-v2:1 api-v2-objects:1 cfg-api-version:1 api-v2-jobs:1", "semantic")
Q("when will the old API stop working", "api-deprecation-v2:3 cfg-api-version:1 api-overview:1 api-versioning:1", "semantic")
Q("older forum posts talk about buckets and jobs, what are those now", "mig-jobs-weaves:3 st-spools:1 api-v2-jobs:1 api-v2-objects:1 mig-api-v2-v3:1", "semantic")
Q("sync wiped files on the server that only existed there", "ts-sync-deleted:3 cfg-sync-delete:2 cli-sync:1", "semantic")
Q("sync copies everything again even though nothing changed", "ts-sync-reuploads:3 cfg-sync-compare:2 cli-sync:1", "semantic")
Q("see what a command would change before actually doing it", "cli-dry-run:3 cli-sync:1", "semantic")
Q("the tool just sits there without printing anything", "ts-cli-hangs:3 cli-doctor:1", "semantic")
Q("check whether my setup and network connection are fine", "cli-doctor:3 ts-cli-hangs:1", "semantic")
Q("it works on my laptop but fails when the pipeline runs it", "ts-step-works-locally:3 err-3120:1", "semantic", "M")
Q("uploading millions of tiny files takes ages", "ts-many-small-files:3 ts-slow-uploads:1", "semantic")
Q("pipeline output shows stars instead of some words", "ts-weave-secret-masked:3 wv-secrets:1", "semantic")
Q("the time on my laptop is wrong and requests get rejected", "ts-clock-skew:3 err-6010:3", "semantic")
Q("big download keeps dying halfway when fetching from the other side of the world", "ts-large-download-timeout:3 cfg-net-read-timeout:2 reg-endpoints:1", "semantic")
Q("can the pipeline steps execute on our own servers", "wv-self-hosted:3 err-3220:1", "semantic")
Q("speed up runs by reusing installed dependencies", "wv-cache:3 int-dbt:1", "semantic")
Q("run a cleanup step only if something earlier broke", "wv-conditions:3 int-notify-action:1", "semantic")
Q("which machine sizes can a step use", "wv-runners:3 bill-compute:1", "semantic")
Q("pass a date to a pipeline when starting it by hand", "cli-weave-run:3 wv-env:2 sdk-py-weave-run:1", "semantic")
Q("keep the report files a run produces", "wv-artifacts:3 err-3404:1", "semantic")
Q("two processes overwrite each other's changes to the same file", "err-2270:3 api-v3-objects-put:1", "semantic")
Q("is my data encrypted", "st-encryption:3 st-cmk:1 st-compliance:1", "semantic", "T")
Q("use our own encryption key", "st-cmk:3 st-encryption:2", "semantic")
Q("do you have independent security audits", "st-compliance:3", "semantic")
Q("what happens to our data after we leave", "st-data-deletion:3 bill-cancel:2", "semantic")
Q("could you ever lose the files we store", "st-durability:3 st-checksums:1 bk-overview:1", "semantic")
Q("upload straight from a web page without exposing our keys", "sdk-js-upload:3 sdk-js-presign:2 st-cors:2 inst-jssdk:1 api-v3-presign:1", "semantic")
Q("browser upload blocked by cross-origin error", "st-cors:3 sdk-js-upload:1", "semantic")
Q("only allow access from our office network", "auth-ip-allowlist:3 err-1021:1", "semantic")
Q("force everyone to use an authenticator app", "auth-mfa:3 err-1010:1", "semantic")
Q("typed the wrong password too many times and now I'm locked out", "auth-account-locked:3 auth-password-reset:1", "semantic", "M")
Q("the sign in page keeps bouncing me back", "ts-login-loop:3", "semantic")
Q("a new hire can't log in through our identity provider", "ts-sso-new-user:3 err-1040:1 auth-scim:1", "semantic")
Q("give the data team edit rights automatically based on directory groups", "auth-sso-groups:3 perm-roles:1", "semantic")
Q("what's the difference between admin and editor", "perm-roles:3 perm-custom-roles:1", "semantic", "M")
Q("let a pipeline read data that belongs to another team's project", "perm-cross-project:3 perm-spool-policy:2 perm-projects:1", "semantic")
Q("make a folder of images downloadable by anyone", "perm-public-access:3 int-static-site:1", "semantic")
Q("host my website", "int-static-site:3 perm-public-access:1", "semantic short")
Q("our founder left and we need to take over the account", "org-transfer-ownership:3", "semantic")
Q("how quickly does support answer", "org-support-plans:3 org-sla:1", "semantic")
Q("compensation for downtime", "org-sla:3 bill-refunds:2", "semantic")
Q("show storage and pipeline numbers in our monitoring dashboards", "int-metrics:3", "semantic")
Q("define all of this in code instead of clicking", "int-terraform:3", "semantic")
Q("the link I gave a partner stopped working earlier than expected", "ts-presigned-expired:3 cli-presign:1", "semantic")
Q("read part of a huge file without downloading all of it", "api-v3-objects-get:3", "semantic")
Q("file is damaged after downloading", "ts-download-corrupt:3 st-checksums:1", "semantic")
Q("start a pipeline from python and wait until it finishes", "sdk-py-weave-run:3 api-v3-runs-get:1", "semantic")
Q("switch between work and personal accounts in the terminal", "cli-profile:3 cli-login:1 cfg-file:1", "semantic")
Q("sign out everywhere", "cli-logout:3 auth-session-length:1 auth-password-reset:1", "semantic")
Q("stop the tool from sending usage statistics", "cfg-telemetry:3", "semantic")
Q("where are settings stored and which one wins", "cfg-file:3 cfg-env-vars:2 cli-config:2", "semantic")
Q("retry after the connection drops without creating duplicates", "api-idempotency:3 cfg-net-max-retries:1 err-5040:1 sdk-py-retries:1", "semantic")
Q("run the tool inside a container in CI", "inst-docker:3 auth-workload-identity:1", "semantic")
Q("getting started", "inst-quickstart:3 inst-macos:1", "semantic short", "H6")
Q("tab completion", "inst-completion:3 rn-cli-421:1", "semantic short")
Q("remove everything the tool left on my machine", "inst-uninstall:3", "semantic")
Q("how long are pipeline logs kept", "cli-weave-logs:3 lim-weaves:1 wv-artifacts:1 bill-plans:1", "semantic", "M")
Q("what does the first digit of an error code mean", "err-overview:3 api-errors-format:1 cli-exit-codes:0", "semantic")
Q("the server said something went wrong on its side", "err-5000:3 err-5040:1 err-5030:1", "semantic")
Q("empty a storage container and delete it with everything inside", "cli-spool-rm:3 err-2304:2 cli-rm:1", "semantic")
Q("difference between tags and metadata on files", "st-metadata-tags:3", "semantic")
Q("if I upload and immediately list, will the new file be there", "st-consistency:3 cli-spool-ls:1", "semantic")
Q("the size shown for my storage didn't change after uploading", "cli-spool-ls:3 st-consistency:2 api-v3-spools-list:1", "semantic")
Q("get rid of a project we no longer use", "org-delete-project:3", "semantic")
Q("separate dev and production environments", "org-create-project:3 perm-projects:2 cli-profile:1", "semantic")
Q("change our company's name in the console", "org-rename:3", "semantic")
Q("stop getting the weekly usage emails", "org-notifications:3", "semantic")
Q("make old archived files readable again", "cli-thaw:3 api-v3-restore:2 st-classes:1 cli-restore:0", "semantic")
Q("discount for paying yearly", "bill-annual:3", "semantic")
Q("how much do downloads cost", "bill-egress:3 bill-storage-pricing:1", "semantic", "T")
Q("how do I upload a file", "cli-cp:3 sdk-py-upload-file:2 inst-quickstart:1 sdk-js-upload:1 sdk-py-upload-fileobj:1", "semantic", "H1")
Q("create a key for the API", "cli-token:3 auth-api-tokens:3 auth-token-scopes:1 api-idempotency:0", "semantic", "H7")
Q("pipeline fails without any message, the log just stops", "err-3130:3 ts-oom-step:2", "semantic")
Q("step runs forever and I want it cut off", "wv-timeout:3 err-3105:1", "semantic")
Q("the transfer is interrupted, do I have to start over", "rn-cli-410:2 cfg-cache-max-size:3 ts-large-download-timeout:2", "semantic")
Q("need a project admin to approve more parallel runs", "lim-request-increase:3 cli-quota:2 err-4031:1 lim-weaves:1 wv-concurrency:1", "semantic")

# --- multi-hop: combine facts from several pages ----------------------------
Q("we're on the free plan, can our pipeline use a GPU machine in Sydney", "lim-free-tier:2 wv-runners:2 reg-launch-syd:2 err-4040:1", "semantic multi-hop")
Q("after upgrading the CLI to 4.1.2 big uploads fail at the end", "rn-cli-412:3 rn-cli-413:3 err-2170:2 err-2107:0", "exact-match multi-hop")
Q("Team plan: API says LMW-4031 when starting a run with queue=false", "err-4031:3 api-v3-runs-create:2 bill-plans:1 lim-weaves:1 wv-concurrency:1", "exact-match multi-hop")
Q("cost of keeping 2 TB in cool storage for a year including reading it back once", "bill-storage-pricing:3 st-classes:1 bill-egress:1", "semantic multi-hop")
Q("is SSO included in the Team plan", "err-4040:2 bill-plans:3 auth-sso-saml:1", "exact-match multi-hop")
Q("backup schedule every hour on Team", "bk-schedule:3 bill-plans:1 cli-backup:1", "exact-match multi-hop")
Q("does deleting a spool also delete its backups and do I still pay for them", "bk-retention:3 ts-deleted-spool-recover:2 bk-pricing:1 bk-vs-versioning:1", "semantic multi-hop")
Q("I moved to the new CLI and my proxy settings from the old yaml file stopped working", "cfg-migrate-loomrc:3 rn-cli-402:2 cfg-net-proxy:1", "semantic multi-hop")


# ---------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------

_QUESTION_WORDS = {"how", "what", "what's", "why", "when", "where", "which", "who",
                   "can", "could", "do", "does", "is", "are", "should", "will"}


def auto_tags(text: str, tags: list[str]) -> list[str]:
    words = text.split()
    out = list(tags)
    if len(words) <= 3 and "short" not in out:
        out.append("short")
    if len(words) >= 10 and "long" not in out:
        out.append("long")
    if (text.endswith("?") or words[0].lower() in _QUESTION_WORDS) and "question" not in out:
        out.append("question")
    return out


def assign_frequencies(queries: list[dict], seed: int = 7) -> list[int]:
    """Zipf-like frequencies; popularity bands decide the rank order.

    Values are strictly decreasing around the head (top 5%) and tail (bottom
    50%) cut points so that slicing by frequency is unambiguous.
    """
    rng = random.Random(seed)
    band_order = {"H": 0, "T": 1, "M": 2, "": 3}

    def band(i: int) -> tuple[int, int]:
        pop = queries[i]["pop"]  # "H1", "H2", ... keep their explicit order
        return band_order[pop[:1]], int(pop[1:] or 0)

    idx = list(range(len(queries)))
    rng.shuffle(idx)
    idx.sort(key=band)
    n = len(queries)
    values = sorted((max(1, round(12000.0 / r ** 1.45 * rng.uniform(0.85, 1.15)))
                     for r in range(1, n + 1)), reverse=True)
    cuts = {max(1, int(n * 0.05)), max(1, -(-n * 5 // 100)), n // 2, -(-n // 2)}
    for k in sorted(cuts):  # make values[k-1] > values[k] at each cut
        if k < n and values[k - 1] <= values[k]:
            for j in range(k):
                values[j] += 1
    freq = [0] * n
    for rank, i in enumerate(idx):
        freq[i] = values[rank]
    return freq


def build() -> tuple[list[dict], list[dict]]:
    docs = parse_docs()
    key_to_id = {}
    corpus = []
    for n, d in enumerate(docs, start=1):
        if d["key"] in key_to_id:
            raise ValueError(f"duplicate doc key {d['key']}")
        doc_id = f"doc-{n:04d}"
        key_to_id[d["key"]] = doc_id
        corpus.append({"id": doc_id, "title": d["title"], "text": d["text"],
                       "metadata": {"section": d["section"]}})
    freqs = assign_frequencies(QUERIES)
    queries = []
    seen_text = set()
    for n, (q, f) in enumerate(zip(QUERIES, freqs, strict=True), start=1):
        if q["text"].lower() in seen_text:
            raise ValueError(f"duplicate query {q['text']!r}")
        seen_text.add(q["text"].lower())
        missing = [k for k in q["rel"] if k not in key_to_id]
        if missing:
            raise ValueError(f"unknown doc keys {missing} in {q['text']!r}")
        if not any(g >= 1 for g in q["rel"].values()):
            raise ValueError(f"no relevant doc for {q['text']!r}")
        rel = {key_to_id[k]: g for k, g in sorted(q["rel"].items(), key=lambda kv: (-kv[1], kv[0]))}
        queries.append({"id": f"q-{n:03d}", "text": q["text"], "relevant": rel,
                        "tags": auto_tags(q["text"], q["tags"]), "frequency": f})
    return corpus, queries


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_out = Path(__file__).resolve().parent.parent / "golden_sets" / "demo"
    ap.add_argument("--out", type=Path, default=default_out)
    args = ap.parse_args()
    corpus, queries = build()
    args.out.mkdir(parents=True, exist_ok=True)
    write_jsonl(args.out / "corpus.jsonl", corpus)
    write_jsonl(args.out / "queries.jsonl", queries)
    n_judg = sum(len(q["relevant"]) for q in queries)
    print(f"wrote {len(corpus)} docs, {len(queries)} queries, {n_judg} judgments to {args.out}")


if __name__ == "__main__":
    main()
