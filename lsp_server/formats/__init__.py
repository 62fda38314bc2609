"""Edit formats: the prompt the model reads and the answer it writes, turned into the region's new text.

- `prompt`: the prompt and the prediction, one fixed structure for every format;
- `choice`: which format a refactor uses (`region`, `hunks`, or `auto` by measurement);
- `hunks`: the `hunks` format's SEARCH/REPLACE blocks, parsed strictly and applied (`apply_hunks`);
- `hunks_diff`: the same format's leaner diff form, read into the same blocks;
- `hunks_match`: where a SEARCH block occurs in the region (exactly, or with one indentation shift);
- `hunks_words`: how the format's messages and notes name each form's parts, and its notes kept short;
- `hygiene`: what the model said, as the region's new text, or refused with a reason;
- `merged`: a merged answer (a snippet in its region) judged on what merging must keep (lazy markers);
- `lazy_merge`: a lazy snippet merged into a region mechanically, as a good model does: the prediction
  an apply sends a server that drafts from it;
- `edits`: the old region and the new as minimal replacements;
- `changes`: those replacements grouped into the changes a person keeps or drops, labelled from their text.
"""
