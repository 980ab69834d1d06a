"""Instruction proposers for GEPA: a plain-text one that small reflectors manage, one that only adds a few rules to
the instruction (a small reflector cannot wreck the seed that way), and a guard that keeps empty, truncated or
template-echo proposals from becoming an instruction.

GEPA adopts whatever text the proposer returns (a known upstream problem: an empty or cut-off reflection becomes
the new instruction). `GuardedProposer` checks each proposal and drops the bad ones; GEPA then skips that
proposal without spending metric calls on it. Rejections are logged and kept in `rejected` for the run's table.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

logger = logging.getLogger(__name__)

_CLOSING = tuple(".!?。！？…)]}>\"'”’」』】*`")
_OPEN_TAIL = tuple(",;:(-–—/&，；：、（")


def changed_words(text: str, current: str) -> int:
    """Words (a CJK character counts as one) that differ between two instructions: the larger side of every
    replaced, inserted or deleted run of a word-level diff.

    >>> changed_words("Extract claims (one fact each).", "Extract claims one fact each).")
    1
    >>> changed_words("Judge the claim. Never guess.", "Judge the claim.")
    2
    >>> changed_words("判断这句话。", "判断那句话。")
    1
    """
    from difflib import SequenceMatcher

    a, b = _WORD.findall(current or ""), _WORD.findall(text or "")
    ops = SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")


_WORD = re.compile(r"[\u3400-\u9fff]|[^\s\u3400-\u9fff]+")


def proposal_problem(text: str, current: str, min_chars: int, max_chars: int, max_unpunctuated_tail: int,
                     template_markers: Sequence[str], min_share: float = 0.0, min_changed_words: int = 0) -> str | None:
    r"""Why a proposed instruction must not be adopted, or None when it is fine.

    >>> args = dict(min_chars=20, max_chars=500, max_unpunctuated_tail=60, template_markers=["<side_info>"])
    >>> proposal_problem("", "old", **args)
    'empty'
    >>> proposal_problem("Be brief.", "old", **args)
    'too short: 9 < 20 characters'
    >>> proposal_problem("Decide whether the text states a checkable fact, and", "old", **args)
    "ends mid-sentence: '... checkable fact, and'"
    >>> proposal_problem("Decide whether the text states a fact.\n- Numbers, dates and events count", "old", **args)
    >>> proposal_problem("Decide whether the text states a checkable fact. Answer true for numbers, dates, events "
    ...                  "and findings, and false for opinions", "old", **args)
    "ends mid-sentence: '...d false for opinions'"
    >>> proposal_problem("Same instruction as before, unchanged.", "Same instruction as before, unchanged.", **args)
    'identical to the current instruction'
    >>> proposal_problem("Rewrite this: <side_info> into an instruction.", "old", **args)
    "echoes the reflection prompt ('<side_info>')"
    >>> proposal_problem("Certainly! Please provide the new instruction.", "Write search queries. " * 10, **args,
    ...                  min_share=0.3)
    'lost most of the current instruction: 46 of 219 characters (< 30%)'
    >>> proposal_problem("Decide whether the text (a sentence) states a fact.", "Decide whether the text a sentence) "
    ...                  "states a fact.", **args, min_changed_words=3)
    'a near-copy of the current instruction: 1 word(s) changed (< 3)'
    """
    stripped = (text or "").strip()
    if not stripped:
        return "empty"
    if len(stripped) < min_chars:
        return f"too short: {len(stripped)} < {min_chars} characters"
    if len(stripped) > max_chars:
        return f"too long: {len(stripped)} > {max_chars} characters"
    if " ".join(stripped.split()) == " ".join((current or "").split()):
        return "identical to the current instruction"
    if min_changed_words and (changed := changed_words(stripped, current)) < min_changed_words:
        return f"a near-copy of the current instruction: {changed} word(s) changed (< {min_changed_words})"
    old = len((current or "").strip())
    if min_share and old and len(stripped) < min_share * old:  # a reply to the reflector's prompt, not a rewrite
        return (f"lost most of the current instruction: {len(stripped)} of {old} characters "
                f"(< {min_share:.0%})")
    for marker in template_markers:
        if marker and marker in stripped:
            return f"echoes the reflection prompt ({marker!r})"
    if stripped.count("```") % 2:
        return "unclosed code fence"
    last_line = stripped.splitlines()[-1].strip()
    tail = f"'...{last_line[-20:]}'" if len(last_line) > 20 else repr(last_line)
    dangling = last_line.endswith(_OPEN_TAIL) or re.search(r"\b(and|or|the|a|an|of|to|with|for)$", last_line, re.I)
    if dangling or (len(last_line) > max_unpunctuated_tail and not last_line.endswith(_CLOSING)):
        return f"ends mid-sentence: {tail}"
    return None


_RULE = re.compile(r"^\s*(-{3,}|\*{3,}|_{3,})\s*$")
_OPENER = re.compile(r"^(certainly|sure|of course|okay|ok|here|below)\b.*:\s*$", re.IGNORECASE)


def extract_instruction(answer: str) -> str:
    r"""The instruction in a reflector's answer: its ``` block (GEPA's extractor); without one, the part between
    the first two horizontal rules (---); without those, the answer minus a chatty opening line ("Sure! Here is...:").

    >>> extract_instruction("Here it is:\n```\nBe exact.\n```\nHope it helps.")
    'Be exact.'
    >>> extract_instruction("Certainly! Below is the new instruction:\n---\nBe exact.\nCheck dates.\n---\nNotes.")
    'Be exact.\nCheck dates.'
    >>> extract_instruction("Sure, here is the instruction:\nBe exact about dates.")
    'Be exact about dates.'
    >>> extract_instruction("Be exact about dates.")
    'Be exact about dates.'
    """
    from gepa.strategies.instruction_proposal import InstructionProposalSignature

    if "```" in answer:
        return InstructionProposalSignature.output_extractor(answer)["new_instruction"]
    lines = answer.strip().splitlines()
    rules = [index for index, line in enumerate(lines) if _RULE.match(line)]
    if len(rules) >= 2:
        return "\n".join(lines[rules[0] + 1:rules[1]]).strip()
    if lines and _OPENER.match(lines[0].strip()):
        lines = lines[1:]
    return "\n".join(lines).strip()


class GuardedProposer:
    """Wrap a GEPA proposal function; reject (log, record, drop) proposals that fail `proposal_problem`.

    Args:
        inner: the proposer that asks the reflection LM, `(candidate, reflective_dataset, components_to_update)
            -> {component: new text}`.
        min_chars, max_chars, max_unpunctuated_tail, template_markers, min_share, min_changed_words: see
            `proposal_problem`.
    """

    def __init__(self, inner: Callable[..., dict[str, str]], min_chars: int = 40, max_chars: int = 4000,
                 max_unpunctuated_tail: int = 60, template_markers: Sequence[str] = (), min_share: float = 0.0,
                 min_changed_words: int = 0) -> None:
        self.inner = inner
        self.limits = dict(min_chars=min_chars, max_chars=max_chars, max_unpunctuated_tail=max_unpunctuated_tail,
                           template_markers=list(template_markers), min_share=min_share,
                           min_changed_words=min_changed_words)
        self.rejected: list[dict[str, Any]] = []
        self.accepted: list[dict[str, Any]] = []
        self.clock: Callable[[], int] | None = None  # metric calls so far; the optimizer sets it (see proposal_log)

    def _stamp(self) -> dict[str, int]:
        return {"metric_calls": int(self.clock())} if self.clock else {}

    def _reject(self, component: str, text: str, reason: str) -> None:
        logger.warning("GEPA proposal for %s rejected (%s): %r", component, reason, (text or "")[:200])
        self.rejected.append({"component": component, "reason": reason, "text": text, **self._stamp()})

    def __call__(self, candidate: dict[str, str], reflective_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
                 components_to_update: list[str]) -> dict[str, str]:
        try:
            proposals = self.inner(candidate=candidate, reflective_dataset=reflective_dataset,
                                   components_to_update=components_to_update)
        except Exception as exc:  # a reflector that fails to answer is a rejected proposal, not a crashed run
            for name in components_to_update:
                self._reject(name, "", f"proposer raised {type(exc).__name__}: {str(exc)[:300]}")
            return {}
        kept = {}
        for name, text in proposals.items():
            problem = proposal_problem(text, candidate.get(name, ""), **self.limits)
            if problem:
                self._reject(name, text, problem)
            else:
                kept[name] = text.strip()
                self.accepted.append({"component": name, "text": kept[name], **self._stamp()})
        return kept


class FencedProposer:
    """GEPA's own reflection prompt as plain text; the new instruction is read from the ``` block of the answer
    (`extract_instruction`: small reflectors often skip the fences and wrap the text in "Certainly! ...").

    No JSON or field markers to get right, which is what small reflectors fail at. Runs on `dspy.settings.lm`
    (GEPA scopes the reflection LM around the call).

    Args:
        max_tokens: completion budget per proposal; None = the LM's own max_tokens.
        prompt: `small` (REWRITE_PROMPT: the task first, no questions, the answer in fences) or `gepa` (GEPA's own
            prompt, which the local 1.5B answers with "Certainly! Please provide the inputs for the new
            instruction." on query_rewrite: `python scripts/probe_reflector.py`).
        prompt_template: a prompt of your own with `<curr_param>` and `<side_info>` (wins over `prompt`).
    """

    def __init__(self, max_tokens: int | None = None, prompt_template: str | None = None,
                 prompt: str = "small") -> None:
        if prompt not in ("small", "gepa"):
            raise ValueError(f"optimizer.instruction_proposer.inner.prompt={prompt!r}: expected small or gepa")
        self.max_tokens = max_tokens
        self.prompt_template = prompt_template or (REWRITE_PROMPT if prompt == "small" else None)
        self.raw_outputs: list[str] = []

    def __call__(self, candidate: dict[str, str], reflective_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
                 components_to_update: list[str]) -> dict[str, str]:
        import dspy
        from gepa.strategies.instruction_proposal import InstructionProposalSignature

        lm = dspy.settings.lm
        if lm is None:
            raise RuntimeError("FencedProposer needs an LM in context: pass reflection_lm to dspy.GEPA")
        kwargs = {"max_tokens": self.max_tokens} if self.max_tokens else {}
        out = {}
        for name in components_to_update:
            if name not in candidate or name not in reflective_dataset:
                continue
            prompt = InstructionProposalSignature.prompt_renderer({
                "current_instruction_doc": candidate[name],
                "dataset_with_feedback": [dict(example) for example in reflective_dataset[name]],
                "prompt_template": self.prompt_template,
            })
            answer = lm(prompt, **kwargs)[0]
            text = answer["text"] if isinstance(answer, dict) else str(answer)
            self.raw_outputs.append(text)
            out[name] = self.compose(candidate[name], text)
        return out

    def compose(self, current: str, answer: str) -> str:
        """The proposed instruction from the reflector's answer (here: the instruction it wrote)."""
        return extract_instruction(answer)


REWRITE_PROMPT = """You improve the instruction that an AI assistant follows.

The current instruction:
```
<curr_param>
```

Inputs the assistant was given, what it answered, and feedback on each answer:
```
<side_info>
```

Write the complete improved instruction for the assistant. Keep everything in the current instruction that is right;
add short, general guidance that would fix the mistakes the feedback names (never the names, numbers or wording of one
example). Do not ask questions and do not address me. Answer with the new instruction only, between ``` fences."""

RULES_HEADER = "Rules learned from mistakes:"

RULES_PROMPT = """An assistant follows this instruction:
```
<curr_param>
```

Here are inputs it was given, its answers and feedback on each answer:
```
<side_info>
```

Write at most {max_rules} NEW rules that would have prevented the mistakes in the feedback. Compare each wrong answer
with what the feedback expected, and write a rule that names that situation and what to do in it ("When ..., answer
... instead of ..."). Each rule is one line that starts with "- ", has at most {max_words} words, and is general: it
names a kind of input or mistake, never the names, numbers or wording of one example. Do not repeat the instruction
or its rules. Answer with the rules only."""

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*\S)\s*$")


def split_rules(instruction: str) -> tuple[str, list[str]]:
    r"""An instruction's base text and the rules appended under `RULES_HEADER`.

    >>> split_rules("Judge the claim.\n\nRules learned from mistakes:\n- Compare years.\n- Check units.")
    ('Judge the claim.', ['Compare years.', 'Check units.'])
    >>> split_rules("Judge the claim.")
    ('Judge the claim.', [])
    """
    base, found, tail = instruction.partition(RULES_HEADER)
    if not found:
        return instruction.strip(), []
    return base.strip(), [m.group(1) for line in tail.splitlines() if (m := _BULLET.match(line))]


def with_rules(base: str, rules: Sequence[str]) -> str:
    r"""`base` with `rules` appended under `RULES_HEADER` (no header without rules).

    >>> with_rules("Judge the claim.", ["Compare years."])
    'Judge the claim.\n\nRules learned from mistakes:\n- Compare years.'
    """
    if not rules:
        return base
    return base + "\n\n" + RULES_HEADER + "\n" + "\n".join(f"- {rule}" for rule in rules)


# A rule that points the student at the feedback or the gold ("answer with what the feedback expected instead of
# "Missing gold claims"", as the 1.5B wrote echoing RULES_PROMPT) asks for what the student never sees.
_FEEDBACK_ECHO = re.compile(r"\bfeedback\b|\bgold\b|\bexpected (?:answer|output)\b|反馈|标准答案", re.IGNORECASE)


def parse_rules(answer: str, max_rules: int, max_words: int) -> list[str]:
    r"""The rules of a reflector's answer: its bullet or numbered lines (a one-line answer without bullets counts
    as one rule), each cut to a sentence of at most `max_words` words; chatty openers and headings are skipped, and
    so is a rule that refers to the feedback or the gold, which the student never sees (logged).

    >>> parse_rules("Sure! Here are the rules:\n- Compare every year in the claim with the evidence.\n"
    ...             "2. Treat a different unit as a contradiction.", 3, 30)
    ['Compare every year in the claim with the evidence.', 'Treat a different unit as a contradiction.']
    >>> parse_rules("Answer insufficient when the evidence is about another population.", 3, 30)
    ['Answer insufficient when the evidence is about another population.']
    >>> parse_rules("- " + "word " * 40, 3, 30)
    []
    >>> parse_rules('- When a claim is missing, answer with what the feedback expected instead of "Missing gold".\n'
    ...             "- When a sentence states two facts, write two claims.", 3, 30)
    ['When a sentence states two facts, write two claims.']
    """
    lines = [line.strip() for line in answer.strip().strip("`").splitlines() if line.strip()]
    bullets = [m.group(1).strip() for line in lines if (m := _BULLET.match(line))]
    if not bullets and len(lines) == 1 and not _OPENER.match(lines[0]):
        bullets = lines
    rules = []
    for rule in bullets:
        rule = rule.strip("*_ ")
        if not rule or len(rule.split()) > max_words or rule.endswith(":"):
            continue
        if _FEEDBACK_ECHO.search(rule):
            logger.info("rule dropped (it refers to the feedback or the gold, which the student never sees): %r", rule)
            continue
        if not rule.endswith(_CLOSING):
            rule += "."
        if rule.casefold() not in {r.casefold() for r in rules}:
            rules.append(rule)
    return rules[:max_rules]


class RulesProposer(FencedProposer):
    """Propose a few rules to append to the instruction instead of a rewritten instruction.

    A small reflector asked to rewrite a prompt tends to lose its task description, wrap it in chat or cut it off;
    asked for 1-3 one-line rules that fix the mistakes in the feedback, it keeps the seed intact and each proposal
    is a small, readable step (GEPA still accepts it only if it scores better on the minibatch). The rules live under
    `RULES_HEADER`; at most `max_total_rules` are kept (the oldest dropped first), and a rule already present is
    not added again.

    Args:
        max_rules: new rules per proposal.
        max_words: words per rule (longer lines are dropped, not cut).
        max_total_rules: rules kept in the instruction.
        max_tokens: completion budget per proposal; None = the LM's own max_tokens.
        prompt_template: the prompt, with `<curr_param>`, `<side_info>`, `{max_rules}` and `{max_words}`.
        prompt: accepted for config compatibility with FencedProposer (conf/optimizer/gepa.yaml); the rules prompt is
            RULES_PROMPT unless `prompt_template` is given.
    """

    def __init__(self, max_rules: int = 3, max_words: int = 30, max_total_rules: int = 8,
                 max_tokens: int | None = 256, prompt_template: str | None = None, prompt: str = "small") -> None:
        self.max_rules = max_rules
        self.max_words = max_words
        self.max_total_rules = max_total_rules
        template = (prompt_template or RULES_PROMPT).replace("{max_rules}", str(max_rules))
        super().__init__(max_tokens=max_tokens, prompt_template=template.replace("{max_words}", str(max_words)))

    def compose(self, current: str, answer: str) -> str:
        """The new instruction: `current` plus the answer's new rules (unchanged when it has none: the guard then
        rejects it as identical)."""
        base, old = split_rules(current)
        known = {rule.casefold() for rule in old}
        new = [rule for rule in parse_rules(answer, self.max_rules, self.max_words) if rule.casefold() not in known]
        return with_rules(base, (old + new)[-self.max_total_rules:])
