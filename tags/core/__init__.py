"""The bottom layer: what every other part of tags shares.

- ``errors``: :class:`UserError` and each layer's error types (``ConfigError``...), one-line
  messages;
- ``types``: captions, image groups, edits and candidates (plain dataclasses);
- ``io``: caption readers, sharding and the resumable JSON Lines writer;
- ``regions``: region-feature files (:class:`Regions`, :func:`open_regions`);
- ``checkpoints``: the one checked loader of saved model and tokenizer folders (a damaged
  folder is one error naming the folder and the file);
- ``paths`` / ``lock``: safe paths under a root, output locks;
- ``progress`` / ``noise``: progress bars and quiet third-party logs;
- ``lazy``: lazy package exports (``import tags`` without torch);
- ``distributed``: rank/world size and the autograd-aware all-gather.

May import: the standard library, numpy and torch. Nothing else of tags, nor ``parsers`` or
``heads``.
"""
