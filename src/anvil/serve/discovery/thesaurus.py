"""A hand-written thesaurus of the words people use for API work: what a task's words also search.

Users and APIs name the same thing differently: a board's "column" is a section or a stage, "fold into" is a
merge, a "knowledge base" a vector store, "hateful" content a moderation. This vocabulary is written for APIs in
general (issue trackers, chat, payments, banking, hosting, incident response, AI, project management,
identity), never from any one API's operations, and it is applied as query expansion: a related word counts
:data:`GROUP_WEIGHT` of the user's own, so it finds a tool whose words differ without outranking one whose
words match.

* :data:`_GROUPS`: words that may stand for one another (each word of a group searches the others);
* :data:`_PHRASES`: turns of phrase of two or three words and what they ask for ("fold into": merge).

Every entry is stemmed as the index stems (:func:`~anvil.serve.discovery.terms.run_terms`), once, at import.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from anvil.serve.discovery.terms import run_terms

__all__ = ["GROUP_WEIGHT", "PHRASE_WEIGHT", "phrase_terms", "related_terms"]

#: What a word of a group (related to one of the task's own) counts, of the task's own word.
GROUP_WEIGHT: Final = 0.4
#: What a term a turn of phrase asks for counts.
PHRASE_WEIGHT: Final = 0.6

#: Words that may stand for one another in a task about an API (generic, not any API's vocabulary).
_GROUPS: Final = (
    # --- actions
    "close resolve complete finish done fulfil fulfill",
    "merge combine fold consolidate dedupe deduplicate",
    "revoke invalidate expire rescind",
    "cancel void abort terminate",
    "archive shelve",
    "reopen unarchive restore",
    "rename retitle",
    "fix correct edit update",
    "share publish",
    "delegate assign allocate",
    "invite invitation",
    "block blocker dependency depend prerequisite",
    "unblock unlock unfreeze",
    "book reserve reservation booking",
    "rotate regenerate renew roll",
    "verify validate verification validation",
    "estimate predict forecast evaluate assess likelihood",
    "translate translation",
    "transcribe transcription transcript dictate caption",
    "summarize summary digest recap",
    "generate produce",
    "classify categorize categorise",
    "moderate moderation harmful abusive toxic offensive hateful hate violent violence inappropriate unsafe nsfw",
    "embed embedding vector semantic similarity similar cluster",
    "refund reimburse reimbursement reversal chargeback",
    "trigger fire kick invoke",
    "ping heartbeat",
    "rebuild redeploy build",
    "replay redeliver resend retry",
    "backup snapshot",
    "sync synchronize synchronise refresh",
    "connect integrate integration pair",
    "disconnect unlink detach",
    "sign signature esign",
    "print mail letter postcard",
    "screen screening watchlist sanction sanctions pep aml",
    "impersonate act",
    "mention tag",
    "pin bookmark",
    "rate rating review feedback",
    # --- things of work
    "column section stage lane bucket swimlane",
    "board kanban project",
    "card task item",
    "ticket issue case incident",
    "subtask child",
    "parent epic",
    "priority urgency severity importance",
    "due deadline",
    "owner assignee responsible",
    "milestone goal objective target okr",
    "template blueprint preset",
    "time timesheet worklog hours",
    "ooo vacation holiday leave pto absence away",
    "status state progress",
    "presence availability away active",
    "profile bio avatar",
    "meeting appointment event calendar",
    "reminder alarm nudge",
    "thread reply replies",
    "channel conversation room chat",
    "dm direct private im",
    "say said saying message messages wrote written",
    "emoji reaction react",
    "stakeholder subscriber audience",
    "announcement broadcast",
    "department division unit team squad",
    "workspace organization company tenant enterprise",
    "visitor traffic visit pageview",
    "split experiment ab variant canary rollout",
    "contact phone email address",
    "sms text mobile phone",
    "voicemail recording audio speech voice sound",
    "screenshot image picture thumbnail",
    "video clip",
    "document doc file attachment upload",
    "folder directory drive",
    "wiki page article knowledge",
    # --- people and access
    "me myself self whoami identity",
    "account login profile",
    "login signin session authenticate authentication auth",
    "token credential key secret",
    "password passphrase credential",
    "role permission access scope privilege right",
    "admin administrator owner",
    "guest external contractor collaborator",
    "employee staff colleague coworker teammate",
    "customer client buyer payer",
    "vendor supplier merchant seller payee recipient",
    "applicant borrower",
    # --- software delivery and operations
    "deploy deployment release rollout ship",
    "build compile",
    "branch ref",
    "commit revision",
    "repository repo codebase",
    "environment variable var env",
    "domain hostname host dns url",
    "record entry",
    "certificate cert ssl tls https",
    "cache cdn edge purge invalidate",
    "function lambda serverless",
    "site website",
    "form submission",
    "redirect rewrite",
    "webhook hook callback listener endpoint",
    "event notification alert",
    "log audit trail history activity journal",
    "timeline history changelog",
    "oncall rota roster shift rotation schedule",
    "escalation escalate",
    "maintenance downtime window",
    "outage incident disruption degradation",
    "service component system",
    "monitor probe uptime health check",
    "error exception crash failure fault",
    "quota limit allowance throttle",
    "spike surge flood burst",
    "metric statistic stat analytics insight report usage",
    "dashboard chart widget gadget",
    "job task run execution batch worker queue",
    "workflow automation rule pipeline playbook",
    "container image docker",
    "server instance machine node host vm",
    "database db datastore",
    "region zone location datacenter",
    "ip address",
    # --- money
    "cost spend spending expense billing usage",
    "invoice bill receipt statement",
    "payment charge pay transaction",
    "transfer payout disbursement withdrawal deposit",
    "balance funds available",
    "bank institution",
    "checking savings account",
    "transaction purchase spending",
    "subscription recurring membership plan",
    "loan credit lending debt liability mortgage",
    "income salary paycheck payroll employment earnings",
    "fraud risk signal",
    "identity kyc idv",
    "debit ach direct",
    "routing number",
    "order checkout cart purchase",
    "product item sku catalog",
    "price pricing fee rate tier",
    "discount coupon promo",
    "shipping delivery shipment fulfillment",
    "dispute chargeback",
    # --- AI
    "model engine llm",
    "assistant agent bot chatbot",
    "prompt instruction input",
    "response completion answer reply",
    "finetune finetuning fine tuning training customize",
    "dataset corpus",
    "knowledge retrieval search corpus",
    "token tokens tokenize",
    "image picture draw illustration dall",
    "speech voice tts aloud",
    "realtime live streaming",
    "eval evaluation grade grader benchmark",
    "batch bulk offline",
    "chat completion",
    # --- domain words users say for an API's own nouns
    "connection item link",
    "holding investment portfolio stock brokerage security",
    "liability debt loan mortgage",
    "holder owner name identity",
    "paystub paycheck payroll employer",
    "enrich categorize merchant",
    "page alert escalate",
    "responder help assist backup",
    "override cover swap",
    "postmortem retrospective",
    "runbook playbook",
    "acknowledge ack",
    "sprint iteration",
    "transition move workflow",
    "worklog logged spent",
    "component module area",
    "fixversion version release",
    "field attribute property custom",
    "screen layout form",
    "jql query",
    "topic purpose",
    "dnd disturb",
    "usergroup handle",
    "alias domain",
    "snippet script inject",
    "dsn key client",
    "tag browser os device",
    "stacktrace stack trace frame",
    "sourcemap symbol debug",
    "feedback report",
    "replay recording session",
    "cron checkin heartbeat",
    "ignore mute archive",
    "story comment activity",
    "plate assigned mine",
    # --- membership, identity and account settings
    "join enter",
    "leave exit quit",
    "ban suspend block",
    "nickname alias handle display",
    "timezone tz",
    "language locale",
    "mfa twofactor otp",
    "sso saml",
    "provision provisioning scim",
    "seat license",
    "retention ttl expiry",
    "permalink link url",
    "draft unsent",
    "avatar icon picture",
    # --- states a task names
    "upcoming future scheduled",
    "overdue late",
    "open unresolved active pending",
    "recent latest last newest",
    "earliest oldest first",
    "memo note",
    "postal mailing address location",
    "cheque check",
    # --- more of what people call an API's things
    "ownership codeowners",
    "ephemeral visible",
    "backlog queue",
    "story epic",
    "reporter creator author",
    "clone duplicate copy",
    "occurrence event hit",
    "processor partner",
    "payroll employment employer",
    "institution provider",
    "rule ruleset orchestration routing",
    "vendor integration",
    "ability capability feature",
    "license seat entitlement",
    "response play playbook",
    "business stakeholder",
    "upgrade plan tier",
    "invoice payment billing",
)
#: Turns of phrase (two or three words in a row, case-folded) and the words they ask for.
_PHRASES: Final[dict[tuple[str, ...], str]] = {
    ("knowledge", "base"): "vector store file search retrieval index",
    ("my", "status"): "profile presence",
    ("can", "call"): "hook webhook callback url",
    ("will", "call"): "hook webhook callback url",
    ("fold", "into"): "merge",
    ("fold", "them"): "merge",
    ("blocked", "by"): "link dependency block relation",
    ("depends", "on"): "dependency link relation",
    ("duplicate", "of"): "link merge duplicate relation",
    ("related", "to"): "link relation",
    ("take", "offline"): "disable",
    ("take", "down"): "disable delete",
    ("go", "live"): "publish deploy release",
    ("log", "in"): "login session auth",
    ("sign", "in"): "login session auth",
    ("log", "out"): "logout session revoke",
    ("sign", "out"): "logout session revoke",
    ("speech", "to", "text"): "transcription transcribe",
    ("text", "to", "speech"): "speech audio",
    ("time", "off"): "ooo vacation leave",
    ("on", "call"): "oncall schedule",
    ("on", "my", "plate"): "task assigned",
    ("assigned", "to", "me"): "assignee myself",
    ("api", "key"): "key token credential",
    ("access", "token"): "token credential",
    ("this", "token"): "auth identity",
    ("a", "b", "test"): "split experiment",
    ("split", "test"): "split experiment traffic",
    ("dry", "run"): "simulate preview validate",
    ("roll", "out"): "deploy release rollout",
    ("hand", "over"): "assign transfer",
    ("sign", "up"): "register create",
    ("who", "am"): "myself me identity",
    ("short", "id"): "shortid",
    ("status", "update"): "status update",
    ("direct", "debit"): "ach auth routing",
}


def _stems(words: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(term for word in words.split() for term in run_terms(word)))


def _group_terms() -> dict[str, tuple[str, ...]]:
    related: dict[str, list[str]] = {}
    for group in _GROUPS:
        terms = _stems(group)
        for term in terms:
            bucket = related.setdefault(term, [])
            bucket.extend(other for other in terms if other != term and other not in bucket)
    return {term: tuple(others) for term, others in related.items()}


_RELATED: Final = _group_terms()
_PHRASE_TERMS: Final = {words: _stems(terms) for words, terms in _PHRASES.items()}
_PHRASE_FIRST: Final = frozenset(words[0] for words in _PHRASES)


def related_terms(term: str) -> tuple[str, ...]:
    """The terms that may stand for ``term`` (a stemmed term), by :data:`_GROUPS`; empty when none."""
    return _RELATED.get(term, ())


def phrase_terms(words: Sequence[str]) -> Iterator[str]:
    """The terms the turns of phrase in ``words`` (a task's words, case-folded) ask for, by :data:`_PHRASES`."""
    for at, word in enumerate(words):
        if word not in _PHRASE_FIRST:
            continue
        for size in (2, 3):
            found = _PHRASE_TERMS.get(tuple(words[at : at + size]))
            if found is not None:
                yield from found
