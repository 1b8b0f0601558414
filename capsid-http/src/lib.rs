//! HTTP surface (MCP over rmcp, OAuth, console, health). Not built yet: see issue "The capsid server".
