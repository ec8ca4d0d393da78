#!/usr/bin/env python3
"""Writes hard_strings.jsonl (one JSON string per line): the texts the tokenizer conformance tests encode with every
vocabulary. Scripts, emoji sequences, NFC/NFD pairs, digit and whitespace runs, code, URLs, special tokens inside
text, control characters, very long words, the empty string, and seeded random mixtures. Invisible or combining
characters are written as \\u escapes so the file reads well. Run: python3 tests/tokenizer/make_hard_strings.py
"""
import json
import os
import random
import re

S = []
def add(*xs):
    for x in xs: S.append(x)

# Empty, tiny, whitespace
add("", " ", "  ", "   ", "\n", "\t", "\r\n", "\r", "a", "A", "I", ".", "'", "''", "\n\n", " \n", "\n ", " \n ", "\t\t", "\t \t", " \t\n\r ")
add("hello", " hello", "  hello", "   hello", "\thello", "\nhello", "hello ", "hello  ", "hello\n", "hello\n\n", "hello \n", "hello   world", "hello \t world", "a\r\nb", "a\r\n\r\nb", "line1\nline2\r\nline3\rline4", "x   \n", "   \n   ", " \n\n \n", "a\n\n\n\n\nb")
# Unicode spaces
add("a\u00a0b", "a\u3000b", "\u3000\u3000全角", "a\u2003b\u2009c", "a\u200bb", "a\u180eb", "a\u0085b", "a\u2028b\u2029c", "\u00a0\u00a0lead", "trail\u00a0", "\u202f\u205f", "a\u1680b", "\u2000\u2001\u2002\u200a")
# Contractions and case
add("I'm", "don't", "THEY'LL", "We've", "she'd", "it's", "IT'S", "You'RE", "'s", "'S'", "O'Neil's", "rock'n'roll", "He said 'hello'.", "ſ'ſ", "'ſ", "’s curly", "it’ll", "'ll've", "y'all'd've")
# Digits
add("123", "1234567", "12345678901234567890", "3.14159", "1,000,000", "-42", "+1 (555) 010-9999", "2024-01-01T12:00:00Z", "v1.2.3", "0x1F600", "1e-10", "٣٤٥", "١٢٣٤٥٦", "१२३४", "๑๒๓", "①②③", "½ ¾", "x²+y³", "Ⅻ Ⅳ", "𝟙𝟚𝟛", "１２３", "໑໒", "1st 2nd 3rd", "abc123def456", "007", "9" * 50)
# Scripts
add("你好，世界！", "我爱自然语言处理。", "今日は良い天気ですね。", "カタカナとひらがな", "한국어 텍스트입니다.", "繁體中文測試", "こんにちは、世界", "漢字かな交じり文",
    "مرحبا بالعالم", "اَلْعَرَبِيَّةُ", "السلام عليكم ورحمة الله", "שלום עולם", "בְּרֵאשִׁית בָּרָא", "नमस्ते दुनिया", "हिन्दी भाषा में पाठ", "क्षत्रिय",
    "สวัสดีครับ", "ภาษาไทยไม่มีช่องว่าง", "தமிழ் மொழி", "বাংলা ভাষা", "ქართული", "Հայերեն", "Ελληνικά: ΟΔΥΣΣΕΥΣ ὀδυσσεύς", "Привет, мир!", "Tiếng Việt có dấu",
    "ꦗꦮ", "ᠮᠣᠩᠭᠣᠯ", "ትግርኛ", "ᏣᎳᎩ", "𐍈𐌰𐌿𐍃", "𓀀𓀁", "ܐܪܡܝܐ", "ދިވެހި", "ພາສາລາວ", "မြန်မာ", "ខ្មែរ", "සිංහල", "Ⴀ ⴀ")
# Newer Unicode letters (15/16) and rare blocks
add("\u1c89\u1c8a", "\ua7cb\ua7cc", "\U000105c0\U000105c1", "\U00031350\U00031351", "\U00010d40\U00010d41", "\U000116d0", "\U0002ebf0")
# Emoji
add("😀", "😀😃😄", "👍🏽", "👍🏻👍🏿", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇺🇸🇯🇵", "❤️", "1️⃣", "🧑🏿‍🚀", "I ❤️ NY 🗽", "👩‍💻 coding", "🤷‍♂️", "🫠🫡", "😀a😀 b 😀\n", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "☺︎ vs ☺️", "🐈‍⬛")
# NFC/NFD pairs and compatibility
for a, b in [("é", "e\u0301"), ("Å", "A\u030a"), ("ñ", "n\u0303"), ("한", "\u1112\u1161\u11ab"), ("ṩ", "s\u0323\u0307"), ("Ǻ", "A\u030a\u0301"), ("ệ", "e\u0323\u0302")]:
    add(a, b, "caf" + a, "caf" + b + " au lait")
add("\u212b", "\u2126", "ﬁ ligature", "ﬀ", "Ｈｅｌｌｏ", "ｶﾀｶﾅ", "㍿", "Ⓐⓑ", "x\u0301\u0302\u0303\u0304", "\u0301leading combining", "a\u0308\u0304")
add("한국어\u11a7", "가\u11a7나", "v\u089b\u0344x", "a\u1ac0\u0316", "\u32ff令和", "\U00011938", "\U00011935\U00011930", "\u0340\u0341 e\u0343")
# Case oddities
add("İstanbul", "ıi", "ß ẞ", "ǅ ǆ Ǆ", "ΣΑΣ σας", "MiXeD CaSe WoRdS")
# Code
add("def f(x):\n    return x ** 2\n", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}", "std::vector<std::pair<int, std::string>> v;",
    "#include <stdio.h>\nint main(){printf(\"hi\\n\");}", "{\"key\": [1, 2, {\"n\": null}], \"ok\": true}", "<div class=\"a\"><span>text</span></div>",
    "SELECT * FROM users WHERE id = 42;", "$ ls -la | grep '^d' && echo done", "x = re.compile(r'\\s+(?!\\S)')", "| a | b |\n|---|---|\n| 1 | 2 |",
    "\\frac{a}{b} + \\sum_{i=0}^{n} x_i", "    indented\n        more\n", "if x:\n\tpass\n", "a=>b; c->d; e::f", "/* comment */ // line", "#!/usr/bin/env bash\nset -euo pipefail",
    "fn main() { println!(\"{}\", 1); }", "  ", "x    =    1", "arr[i][j] += 1;;;")
# URLs, emails, paths
add("https://example.com/path?q=1&x=y#frag", "http://user:pw@host:8080/a/b.html", "www.example.org", "mailto:user@example.com", "user.name+tag@sub.domain.co.uk",
    "C:\\Users\\me\\file.txt", "/usr/local/bin/python3", "~/.cache/huggingface/hub", "ftp://ftp.example.com/pub/file.tar.gz", "https://zh.wikipedia.org/wiki/中文")
# Special tokens in text
add("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "text<|endoftext|>more", "<|eot_id|>", "<|begin_of_text|>Hello",
    "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", "</s>", "<s>", "<unk>", "<s>Hello</s>", "x</s>y", " <s> ", "<s><s></s>", "<think>\n\n</think>\n\nAnswer",
    "<tool_call>{\"name\": \"f\"}</tool_call>", "<|im_start", "<|im_start|><|im_end|>", "<|fim_prefix|>def<|fim_suffix|>ret<|fim_middle|>", "<|reserved_special_token_5|>",
    "a <|im_end|> b", "<|im_end|>\n", "<<s>>", "<|<|im_start|>|>", "<0x41>", "<0x0A> byte", "▁", "▁▁hello▁world", "  ▁ x", "Ġhello", "ĊĠĠ", "<|EOT_ID|>", "<|eot_id|><|eot_id|>")
# Control characters
add("\x00", "a\x00b", "\x01\x02\x03", "\x7f", "\x1b[31mred\x1b[0m", "\u200d", "a\u200db", "\ufeffBOM", "\ufffd", "x\ufffdy", "\u0007bell", "\x0b\x0c", "\ue000\uf8ff", "\uffff", "\U0010ffff", "tab\tsep\tvalues")
# Long words / runs
add("a" * 1000, "supercalifragilisticexpialidocious" * 20, "😀" * 200, "ab" * 500, "1" * 500, " " * 1000, "\n" * 200, "-" * 300, "=" * 100 + "\n" + "=" * 100,
    "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQ=" * 10, "字" * 300, "x" * 5000, " \t" * 300, ".\n" * 100, "Pneumonoultramicroscopicsilicovolcanoconiosis",
    "\u00e9" * 200, "e\u0301" * 200, "ก" * 300)
# Mixed
add("Hello 世界! Привет мир! مرحبا 🌍 123 <|im_end|>", "The price is $5.99 (€5,49) — 20% off!", "Mix: α+β=γ, ∑∫∂, →⇒⟹, ©®™", "\"Quoted\" and «guillemets» and „German“",
    "Tabs\tand\nnewlines\r\nand  spaces", "email: a@b.c; url: https://x.y/z?a=1", "ÀÉÎÕÜ àéîõü", "naïve café résumé", "em—dash en–dash hyphen-minus", "…ellipsis… ‘single’ “double”",
    "Ünïcödé ïs fün", "The year 2024 and 1990s", "CO₂ H₂O", "π≈3.14159265358979", "日本語とEnglishの混在テキスト123", "emoji🙂inside😉words", "  multiple   spaces   everywhere  ")

rng = random.Random(1234)
frags = ["hello", " world", "  ", "\n", "\t", "你好", "😀", "👨‍👩‍👧", "123", "4567", "é", "e\u0301", "<|im_end|>", "</s>", "<s>", "'s", "'LL", "مرحبا", "שלום", "नमस्ते", "สวัสดี",
         ",", ".", "!!", "?", "\r\n", " ", "code()", "{}", "[x]", "ÿ", "\u00a0", "\u3000", "Ġ", "▁", "ß", "İ", "1/2", "a-b", "...", "—", "\x01", "<|eot_id|>", "<think>", "ＡＢ"]
for i in range(70):
    n = rng.randint(2, 12)
    S.append("".join(rng.choice(frags) for _ in range(n)))


VISIBLE_ESCAPES = re.compile("[\u007f-\u009f\u2028\u2029\ufeff\u200b-\u200f\u180e\ue000-\uf8ff\uffff"
                             "\U000e0000-\U000e007f\U0010ffff\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000"
                             "\u0300-\u036f\u1ab0-\u1aff\u0898-\u089f\u11a7]")


def main():
    seen, lines = set(), []
    for s in S:
        if s in seen:
            continue
        seen.add(s)
        line = VISIBLE_ESCAPES.sub(lambda m: json.dumps(m.group(0)).strip('"'), json.dumps(s, ensure_ascii=False))
        assert json.loads(line) == s
        lines.append(line)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hard_strings.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(lines)} strings -> {path}")


if __name__ == "__main__":
    main()
