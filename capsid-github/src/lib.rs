//! GitHub App adapter of the `RepoHost` port. Not built yet: see issue "GitHub App access".
