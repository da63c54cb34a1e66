// Writes the expected token ids of Hugging Face tokenizers for a few hundred varied strings, for
// the real tokenizer fixtures (qwen3, llama3, llama3_2) as the tests unpack them into
// cluster-node/target/tokenizer-fixtures (run any tokenizer test first, e.g. HfTokenizerGoldenTest).
//
// Reference implementation: the npm package @huggingface/tokenizers (Hugging Face's own JS port of
// `tokenizers`, the one transformers.js uses), pinned in package-lock.json.
//
//   cd tools/tokenizer-golden && npm ci && node generate.mjs [fixtures-dir] [out-dir]
//
// Output: one JSON per model, {origin, model, cases: [{text, ids, idsSpecial, decoded,
// decodedSkip}]}, where ids = encode(text, add_special_tokens=false), idsSpecial = with special
// tokens, decoded = decode(ids) with the config's clean_up_tokenization_spaces, decodedSkip = decode
// of idsSpecial with skip_special_tokens=true.
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const fixtures = process.argv[2] ?? path.join(repo, "cluster-node/target/tokenizer-fixtures");
const outDir =
  process.argv[3] ?? path.join(repo, "cluster-node/src/test/resources/dev/troupe/engine/tokenizer");
const pkg = JSON.parse(
  fs.readFileSync(path.join(here, "node_modules/@huggingface/tokenizers/package.json"), "utf8"));

// Deterministic PRNG (mulberry32) so the generated strings never change between runs.
function rng(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const fixed = [
  "", " ", "  ", "\n", "\n\n", "\t", " \t \n ", "a", "A", "Hello world", "Hello, world!",
  "hello   world", "   leading spaces", "trailing spaces   ", "line one\nline two\n\nline four",
  "tabs\tand\ttabs", "\r\nWindows\r\nlines\r\n", "The quick brown fox jumps over the lazy dog.",
  "I'm sure you've seen it; they're here, isn't it? We'll see.", "Don't stop . Now , really ! Ok ?",
  "It's 'quoted' and \"double quoted\".", "1", "12", "123", "1234", "12345678901234567890",
  "3.14159 2.71828 -42 +7 1e-10 0x1F 0b1010", "Phone: +1 (555) 123-4567", "2024-05-17T12:34:56Z",
  "$1,000,000.00 and 50% off", "日本語のテキストです。", "中文分词测试：你好，世界！", "한국어 문장입니다.",
  "Привет, мир! Как дела?", "Ελληνικά γράμματα", "עברית מימין לשמאל", "العربية من اليمين إلى اليسار",
  "हिन्दी पाठ", "ภาษาไทย", "Tiếng Việt có dấu", "café naïve résumé coöperate", "Straße Maße ß ẞ",
  "e\u0301 vs é (combining vs precomposed)", "Å Å Å", "ﬁ ﬂ ﬀ ligatures", "①②③ ⅰⅱⅲ ½ ¾",
  "😀 😃 😄 😁", "👨‍👩‍👧‍👦 family", "🏳️‍🌈 flag", "👍🏽 skin tone", "🇯🇵🇺🇸 flags", "✔️ ✅ ❌ ⚠️",
  "emoji😀inside😀words", "∀x∈ℝ: x² ≥ 0", "→ ← ↑ ↓ ⇒ ⇔", "© ® ™ § ¶ †", "\u200b zero\u200bwidth \u200d",
  "\u00a0non-breaking\u00a0space", "soft\u00adhyphen", "\u3000ideographic space\u3000",
  "def f(x):\n    return x * 2\n", "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}",
  "const x = {a: 1, b: [1, 2, 3]};", "<div class=\"x\">Hello</div>", "SELECT * FROM users WHERE id = 42;",
  "#include <stdio.h>\nint main() { printf(\"%d\\n\", 42); }", "{\"key\": \"value\", \"n\": [1, 2.5, null]}",
  "https://example.com/path?query=1&b=2#frag", "user@example.com", "C:\\Users\\name\\file.txt",
  "snake_case camelCase PascalCase kebab-case SCREAMING_CASE", "a+b=c; x-=1; y*=2; z/=3; w%=4",
  "    indented code\n        more indented\n", "!!!???...,,,;;;", "...", "--- *** ___ ===",
  "((()))[[[]]]{{{}}}", "Supercalifragilisticexpialidocious", "Pneumonoultramicroscopicsilicovolcanoconiosis",
  "antidisestablishmentarianism", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
  "abababababababababababababababababababab", "x".repeat(300), " ".repeat(40) + "x",
  "\n".repeat(12) + "end", "word ".repeat(50), "🙂".repeat(20), "中".repeat(40),
  "Mixed 中文 and English with emoji 🎉 and numbers 12345.", "ALL CAPS SENTENCE HERE",
  "ThisIsAVeryLongCamelCaseIdentifierWithoutSpacesAtAll", "hyphen-ated-words-in-a-row",
  "naïve_café_résumé", "\\n literal backslash n", "\"quotes\" 'single' `back`",
  "<|endoftext|>", "<|im_start|>user\nhi<|im_end|>", "<|im_start|>", "<|im_end|>", "<|im_start|",
  "<|im_start|>>", "<<|im_end|>", "text<|im_end|>text", " <|im_end|> ", "<think>reasoning</think>",
  "<think>\n\n</think>\n\n", "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>",
  "<|begin_of_text|>", "<|begin_of_text|>Hello", "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
  "<|eot_id|>", "<|end_of_text|>", "<|eom_id|>", "<|python_tag|>print(1)", "<|reserved_special_token_5|>",
  "<|begin_of_text|><|begin_of_text|>", "<s></s>[INST]", "<|endoftext|><|endoftext|>",
];

const pools = [
  "hello", "world", " the", "ing", "tion", "日本", "语言", "🎉", "😀", "👨‍💻", "123", "4567", "89", "  ",
  "\n", "\t", "\n\n", ".", ",", "!", "?", "'s", "'re", " n't", "(", ")", "{", "}", "=>", "==", "::", "->",
  "café", "über", "Привет", "مرحبا", "नमस्ते", "🙂", "∑", "√", "x", "y", "_", "-", "/", "\\", "\"", "'",
  "<|im_end|>", "<|eot_id|>", "<think>", "</think>", "<|begin_of_text|>", "é", "e\u0301", "ﬁ", "Ⅷ",
  "\u00a0", "\u200b", "ü", "ß", "İ", "ı", "한", "ᄀ", "ア", "ｱ", "０１２", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𠜎𠜱", "\ud83c\udf08",
];

function randomCases(count, seed) {
  const r = rng(seed);
  const out = [];
  for (let i = 0; i < count; i++) {
    const n = 1 + Math.floor(r() * 12);
    let s = "";
    for (let j = 0; j < n; j++) {
      const pick = r();
      if (pick < 0.75) s += pools[Math.floor(r() * pools.length)];
      else if (pick < 0.85) s += " ".repeat(1 + Math.floor(r() * 6));
      else if (pick < 0.95) s += String(Math.floor(r() * 1e7));
      else s += String.fromCodePoint(0x20 + Math.floor(r() * 0x2fff));
    }
    out.push(s);
  }
  return out;
}

// Lone surrogates are excluded: JS and Rust strings differ there (our decision is documented in
// HfTokenizer and tested separately).
const isWellFormed = (s) => !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);
const texts = [...fixed, ...randomCases(200, 20240517)].filter(isWellFormed);

// The JS port rejects an empty id list; Hugging Face decodes it to "".
function decode(tok, ids, skip, cleanUp) {
  if (ids.length === 0) return "";
  return tok.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: cleanUp });
}

fs.mkdirSync(outDir, { recursive: true });
for (const model of ["qwen3", "llama3", "llama3_2"]) {
  const dir = path.join(fixtures, model);
  const json = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
  const config = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
  const tok = new Tokenizer(json, config);
  const cleanUp = config.clean_up_tokenization_spaces === true;
  const cases = texts.map((text) => {
    const ids = tok.encode(text, { add_special_tokens: false }).ids;
    const idsSpecial = tok.encode(text, { add_special_tokens: true }).ids;
    return {
      text,
      ids,
      idsSpecial,
      decoded: decode(tok, ids, false, cleanUp),
      decodedSkip: decode(tok, idsSpecial, true, cleanUp),
    };
  });
  const out = {
    origin: `tools/tokenizer-golden/generate.mjs with npm @huggingface/tokenizers ${pkg.version}`,
    model,
    cleanUpTokenizationSpaces: cleanUp,
    cases,
  };
  const file = path.join(outDir, `golden-${model}.json`);
  fs.writeFileSync(file, JSON.stringify(out) + "\n");
  console.log(`${file}: ${cases.length} cases`);
}
