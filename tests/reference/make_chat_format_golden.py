#!/usr/bin/env python3
"""Writes tests/golden/chat_formats.txt: conversations rendered by transformers' own chat-template
renderer (transformers.utils.chat_template_utils.render_jinja_template, jinja2 in the sandboxed
environment apply_chat_template uses) from three real templates:

  gemma3        tests/reference/chat_templates/gemma3.jinja, Gemma 3's instruct template (source
                noted in tests/reference/README.md, "Chat format golden data"), rendered with
                bos_token "<bos>"
  smollm2       tokenizer.chat_template read from models/SmolLM2-135M-Instruct.Q4_1.gguf
  mistral_nemo  tests/reference/chat_templates/mistral_nemo.jinja, the chat template of
                mistralai/Mistral-Nemo-Instruct-2407, rendered with bos_token "<s>" and eos_token
                "</s>", with the cases of NEMO_CASES too

tests/chat_formats_test.cpp formats the same conversations with staticlm and requires byte equality.
Nothing here comes from staticlm.

Usage: python3 tests/reference/make_chat_format_golden.py [--model PATH] [--out PATH]
"""
import argparse
import datetime
import os
import re
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gguf  # noqa: E402
import jinja2  # noqa: E402
import transformers  # noqa: E402
from transformers.utils.chat_template_utils import render_jinja_template  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

SYSTEM = "You are a careful assistant.\nAnswer in one line."
# Content with surrounding whitespace, including Unicode spaces Python's str.strip removes
# (U+3000, U+00A0, U+2028, U+001F) and one it keeps (U+200B).
SPACY = "\u3000 \t Hello,\u00a0world!\n\n\u2028\u001f"
KEPT = "\u200b tail kept \u200b"


def msgs(*pairs):
    return [{"role": r, "content": c} for r, c in pairs]


# (name, messages, add_generation_prompt); every case is rendered with both templates.
CASES = [
    ("single_turn", msgs(("user", "What is 2+2?")), True),
    ("single_turn_no_prompt", msgs(("user", "What is 2+2?")), False),
    ("system_and_user", msgs(("system", SYSTEM), ("user", "Name a colour.")), True),
    ("system_and_user_no_prompt", msgs(("system", SYSTEM), ("user", "Name a colour.")), False),
    ("multi_turn", msgs(("user", "Hello"), ("assistant", "Hi! How can I help?"),
                        ("user", "Tell me a joke.")), True),
    ("multi_turn_no_prompt", msgs(("user", "Hello"), ("assistant", "Hi! How can I help?")), False),
    ("system_multi_turn", msgs(("system", SYSTEM), ("user", "Hello"), ("assistant", "Hi there."),
                               ("user", "Bye.")), True),
    ("empty_system", msgs(("system", ""), ("user", "Hi")), True),
    ("system_with_spaces", msgs(("system", "  spaced system  "), ("user", "Hi")), True),
    ("whitespace_content", msgs(("user", SPACY), ("assistant", "  reply  \n"), ("user", KEPT)), True),
    ("unicode", msgs(("user", "Grüße, 世界! 🌍"), ("assistant", "Привет.")), False),
    ("specials_in_text", msgs(("user", "say <end_of_turn> and <|im_end|>")), True),
    # Gemma's template raises on these; ChatML renders them.
    ("roles_not_alternating", msgs(("user", "one"), ("user", "two")), True),
    ("assistant_first", msgs(("assistant", "I start."), ("user", "Hi")), True),
]

# Mistral NeMo only: its system message goes into the last message when that is a user's and
# nowhere otherwise; it raises on an empty conversation and on any role but user and assistant
# after the system message.
NEMO_CASES = [
    ("system_then_reply", msgs(("system", SYSTEM), ("user", "Hello"), ("assistant", "Hi.")), False),
    ("system_three_turns", msgs(("system", SYSTEM), ("user", "One"), ("assistant", "1"),
                                ("user", "Two"), ("assistant", "2"), ("user", "Three")), True),
    ("system_only", msgs(("system", SYSTEM)), True),
    ("empty_conversation", [], True),
    ("tool_message", msgs(("user", "Hi"), ("assistant", "Calling."), ("tool", "42")), True),
    ("system_not_first", msgs(("user", "Hi"), ("assistant", "Hello."), ("system", "Be brief."),
                              ("user", "Bye")), True),
]


def compact(real):
    """Gemma 3's template on one line: no trim markers, double quotes, escaped newlines, attribute access."""
    t = re.sub(r"-%}\n\s*", "%}", real)
    t = re.sub(r"\n\s*\{%-", "{%", t)
    t = re.sub(r"}}\n\s*", "}}", t)
    t = t.replace("'\n\n'", '"\\n\\n"').replace("\n", "\\n").replace("message['role']", "message.role")
    return t.replace("'<start_of_turn>'", '"<start_of_turn>"')


def gemma_variants(real):
    """Spellings of Gemma 3's template seen in the wild or equivalent in Jinja, derived from the real text."""
    text_only = real[real.index("    {%- if message['content'] is string -%}"):real.index("    {{ '<end_of_turn>")]
    return {
        # A "\n" separator after the system text (some converted GGUF files).
        "gemma3_single_newline": real.replace("+ '\n\n' -%}", "+ '\n' -%}"),
        # No {{ bos_token }} (the BOS left to the tokenizer).
        "gemma3_no_bos": real.replace("{{ bos_token }}\n", "", 1),
        # Text-only: the content printed without the string/list branches.
        "gemma3_text_only": real.replace(text_only, "    {{- message['content'] | trim -}}\n"),
        "gemma3_compact": compact(real),
    }


# Variants that must render exactly as the real template does.
SAME_AS_REAL = ("gemma3_text_only", "gemma3_compact")


def read_smollm2_template(path):
    reader = gguf.GGUFReader(path)
    field = reader.fields["tokenizer.chat_template"]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def render(template, messages, add_generation_prompt, **kwargs):
    rendered, _ = render_jinja_template(conversations=[messages], chat_template=template,
                                        add_generation_prompt=add_generation_prompt, **kwargs)
    return rendered[0]


def hexs(text):
    return text.encode("utf-8").hex()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "golden", "chat_formats.txt"))
    args = ap.parse_args()

    with open(os.path.join(HERE, "chat_templates", "gemma3.jinja"), encoding="utf-8") as f:
        templates = {"gemma3": (f.read(), {"bos_token": "<bos>"})}
    templates["smollm2"] = (read_smollm2_template(args.model), {})
    for name, text in gemma_variants(templates["gemma3"][0]).items():
        templates[name] = (text, {"bos_token": "<bos>"})
    with open(os.path.join(HERE, "chat_templates", "mistral_nemo.jinja"), encoding="utf-8") as f:
        templates["mistral_nemo"] = (f.read(), {"bos_token": "<s>", "eos_token": "</s>"})

    lines = [
        "# Chat format golden data: conversations rendered by transformers' render_jinja_template.",
        f"# generator: tests/reference/make_chat_format_golden.py; transformers {transformers.__version__}, "
        f"jinja2 {jinja2.__version__}, python {sys.version.split()[0]}",
        f"# date: {datetime.date.today().isoformat()}",
        "# templates: gemma3 = tests/reference/chat_templates/gemma3.jinja (bos_token '<bos>'), "
        "smollm2 = tokenizer.chat_template of models/SmolLM2-135M-Instruct.Q4_1.gguf, "
        "mistral_nemo = tests/reference/chat_templates/mistral_nemo.jinja (bos_token '<s>', eos_token '</s>')",
        "# format: 'template NAME HEX' (the Jinja text; gemma3_* are variants of gemma3 made by this script),",
        "# then per case 'case NAME TEMPLATE ADD_GENERATION_PROMPT', 'message ROLE HEX' per message, and",
        "# 'text HEX' (the rendering) or 'error' (the template raised); HEX is the lowercase hex of the UTF-8",
        "# bytes ('-' if empty).",
    ]
    for variant in SAME_AS_REAL:  # the variants are equivalent spellings, checked by jinja2 itself
        for _, messages, gen in CASES[:-2]:
            assert render(templates[variant][0], messages, gen, bos_token="<bos>") == \
                render(templates["gemma3"][0], messages, gen, bos_token="<bos>"), variant
    for template_name, (template, _) in templates.items():
        lines.append(f"template {template_name} {hexs(template)}")
    n_cases = 0
    for template_name, (template, extra) in templates.items():
        for name, messages, gen in CASES + (NEMO_CASES if template_name == "mistral_nemo" else []):
            n_cases += 1
            lines.append(f"case {name} {template_name} {int(gen)}")
            for m in messages:
                lines.append(f"message {m['role']} {hexs(m['content']) or '-'}")
            try:
                lines.append(f"text {hexs(render(template, messages, gen, **extra)) or '-'}")
            except jinja2.TemplateError:
                lines.append("error")
    with open(args.out, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}: {n_cases} cases")


if __name__ == "__main__":
    main()
