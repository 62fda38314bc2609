"""Stats: what one refactor measured, said in words, and kept.

- `measured`: one refactor's measurement, frozen once the engine has it, and the honesty rules behind
  its figures (`RefactorStats`);
- `words`: the same stats as the one-line summary every refactor ends with and the status-bar text;
- `history`: one versioned record per refactor in the state folder, and its summary.
"""
