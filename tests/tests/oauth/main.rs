//! The owner's way in over real HTTP: the authorization server (one negative test per row of
//! the RFC 9700 / OAuth 2.1 checklist, perf-security-anchors D.4), the full login through a
//! fake GitHub ending with a real MCP client on `/mcp`, `/csp-report`, and the console (also
//! rendered by headless Chromium). Every server runs over SQLite with a `ManualClock`.

mod cdp;
mod env;

mod behind_a_proxy;
mod codes_and_pkce;
mod consent;
mod console;
mod console_autonomy;
mod console_checkmarks;
mod console_chromium;
mod console_documents;
mod console_first;
mod console_live;
mod console_local;
mod console_skills;
mod csp_report;
mod github_round_trip;
mod hostile_input;
mod jsonrpc_on_mcp;
mod redirects;
mod refresh_and_access;
mod registration_and_limits;
mod secrets_and_login;
