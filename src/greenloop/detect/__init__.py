"""Repository -> Cascade of Stage: the stages of a repository and of a monorepo's packages."""
