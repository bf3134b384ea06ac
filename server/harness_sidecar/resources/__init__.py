"""Resources are data: instructions, skills, templates, found and read without running code.

``catalog`` finds them under ordered roots, ``frontmatter`` reads a bounded prefix with safe
YAML, ``activation`` reads a skill's body when it is activated, ``templates`` renders,
``context`` builds the system prompt, ``paths`` keeps every read inside its root, ``lint``
applies the same rules to an editor's unsaved text. Nothing here imports ``extensions``.
"""
