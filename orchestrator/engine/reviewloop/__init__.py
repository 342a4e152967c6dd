"""The review loop around a run's workspace: bootstrap (:mod:`.bootstrap`: ``.worktreeinclude``,
setup and teardown scripts), comments sent back to the agent (:mod:`.comments`), checkpoints of
the workspace after each turn and rewinding to one (:mod:`.checkpoints`), and taking a session
over in the runtime's own interactive CLI (:mod:`.takeover`)."""
