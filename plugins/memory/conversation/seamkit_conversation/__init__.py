"""seamkit-conversation: the workflow steps of a chat turn (``contextualize``, ``recall``,
``remember``, ``compose``, ``complete``); see :mod:`seamkit_conversation.steps`."""
