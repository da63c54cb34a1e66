package dev.troupe.engine.tokenizer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.Tokenizer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TokenizerBundleTest {

  @Test
  void demoIsQwen3() {
    TokenizerBundle demo = TokenizerBundle.demo();
    TokenizerBundle qwen3 = TokenizerFixtures.bundle("qwen3");
    String text = "Hello <|im_start|>user\n你好 🎉<|im_end|>";
    assertArrayEquals(qwen3.tokenizer().encode(text, true), demo.tokenizer().encode(text, true));
    assertEquals("<|im_end|>", demo.eosToken());
    assertEquals(151645, demo.eosTokenId());
    assertEquals("<|endoftext|>", demo.padToken());
    assertNull(demo.bosToken());
    assertEquals(qwen3.chatTemplates(), demo.chatTemplates());
    assertTrue(demo.chatTemplates().get("default").contains("enable_thinking"));
    String prompt =
        demo.chatTemplate()
            .render(
                new ChatTemplate.Input(
                    List.of(Map.of("role", "user", "content", "Hi")),
                    null,
                    null,
                    true,
                    false,
                    Map.of()));
    assertEquals("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", prompt);
  }

  @Test
  void perRequestTemplatesSeeTheSpecialTokens() {
    TokenizerBundle llama = TokenizerFixtures.bundle("llama3_2");
    ChatTemplate custom =
        llama.compileTemplate(
            "{{ bos_token }}{% for m in messages %}[{{ m.content }}]{% endfor %}{{ eos_token }}");
    assertEquals(
        "<|begin_of_text|>[a][b]<|eot_id|>",
        custom.render(
            new ChatTemplate.Input(
                List.of(
                    Map.of("role", "user", "content", "a"),
                    Map.of("role", "assistant", "content", "b")),
                null,
                null,
                false,
                false,
                Map.of())));
    // a name of one of the model's templates selects it
    ChatTemplate byName = llama.compileTemplate("default");
    Map<String, Object> user = Map.of("role", "user", "content", "x");
    ChatTemplate.Input input =
        new ChatTemplate.Input(
            List.of(user), null, null, true, false, Map.of("date_string", "1 Jan 2030"));
    assertEquals(llama.chatTemplate().render(input), byName.render(input));
    assertThrows(
        ChatTemplate.TemplateException.class,
        () -> llama.compileTemplate("{% if %}").render(input));
  }

  @Test
  void readsSpecialTokensAsTransformersSpecialTokensMap() {
    TokenizerBundle llama = TokenizerFixtures.bundle("llama3_2");
    assertEquals("<|begin_of_text|>", llama.bosToken());
    assertEquals("<|eot_id|>", llama.eosToken());
    assertEquals(128009, llama.eosTokenId());
    assertEquals(List.of("bos_token", "eos_token"), List.copyOf(llama.specialTokens().keySet()));
    TokenizerBundle qwen = TokenizerFixtures.bundle("qwen3");
    assertEquals(
        List.of("eos_token", "pad_token", "additional_special_tokens"),
        List.copyOf(qwen.specialTokens().keySet()));
    assertTrue(
        ((List<?>) qwen.specialTokens().get("additional_special_tokens")).contains("<|im_start|>"));
  }

  @Test
  void postProcessorAddsBosOnlyWhereTheTokenizerSaysSo() {
    Tokenizer llama32 = TokenizerFixtures.bundle("llama3_2").tokenizer();
    Tokenizer llama3 = TokenizerFixtures.bundle("llama3").tokenizer();
    assertEquals(128000, llama32.encode("Hi", true)[0]);
    assertEquals(llama32.encode("Hi", false).length + 1, llama32.encode("Hi", true).length);
    assertArrayEquals(llama3.encode("Hi", false), llama3.encode("Hi", true));
  }

  @Test
  void vocabularyMapsCoverBaseAndAddedTokens() {
    Tokenizer qwen = TokenizerFixtures.bundle("qwen3").tokenizer();
    assertEquals(151669, qwen.vocabSize());
    assertEquals("<think>", qwen.idToToken(151667));
    assertEquals(151644, qwen.tokenToId("<|im_start|>").orElseThrow());
    assertEquals("Ġhello", qwen.idToToken(qwen.tokenToId("Ġhello").orElseThrow()));
    assertNull(qwen.idToToken(-1));
    assertNull(qwen.idToToken(999_999));
    assertTrue(qwen.specialTokenIds().contains(151644));
    // <think> is an added token but not special: skip_special_tokens keeps it
    assertTrue(!qwen.specialTokenIds().contains(151667));
    assertEquals("<think>x", qwen.decode(qwen.encode("<|im_start|><think>x", false), true, true));
  }

  @Test
  void loneSurrogatesBecomeReplacementCharacters() {
    Tokenizer qwen = TokenizerFixtures.bundle("qwen3").tokenizer();
    assertArrayEquals(qwen.encode("a\uFFFDb\uFFFD", false), qwen.encode("a\uD800b\uDC00", false));
    assertArrayEquals(qwen.encode("\uD83D\uDE00", false), qwen.encode("😀", false));
    assertEquals("x\uFFFD", HfTokenizer.replaceLoneSurrogates("x\uDBFF"));
    assertEquals("\uFFFD\uFFFD", HfTokenizer.replaceLoneSurrogates("\uDC00\uD800"));
  }

  @Test
  void longInputIsNeverTruncated() {
    Tokenizer qwen = TokenizerFixtures.bundle("qwen3").tokenizer();
    String text = String.join(" ", java.util.Collections.nCopies(20_000, "word"));
    assertEquals(20_000, qwen.encode(text, false).length);
  }

  @Test
  void cleanUpTokenizationSpacesFollowsTheConfig() {
    Tokenizer llama = TokenizerFixtures.bundle("llama3").tokenizer();
    Tokenizer qwen = TokenizerFixtures.bundle("qwen3").tokenizer();
    String text = "Wait . Really , they 're here !";
    assertEquals(
        "Wait. Really, they're here!", llama.decode(llama.encode(text, false), false, true));
    assertEquals(text, qwen.decode(qwen.encode(text, false), false, true));
  }

  @Test
  void readsTemplateFilesAndSpecialTokensMapAsTransformersSaves(@TempDir Path dir)
      throws Exception {
    Files.createSymbolicLink(
        dir.resolve("tokenizer.json"), TokenizerFixtures.dir("qwen3").resolve("tokenizer.json"));
    Files.writeString(
        dir.resolve("tokenizer_config.json"),
        "{\"eos_token\": null, \"chat_template\": \"from config\","
            + " \"clean_up_tokenization_spaces\": true}");
    Files.writeString(
        dir.resolve("special_tokens_map.json"),
        "{\"eos_token\": {\"content\": \"<|im_end|>\", \"lstrip\": false}, \"pad_token\":"
            + " \"<|endoftext|>\"}");
    Files.writeString(dir.resolve("chat_template.jinja"), "main {{ eos_token }}\n");
    Files.createDirectories(dir.resolve("additional_chat_templates"));
    Files.writeString(
        dir.resolve("additional_chat_templates/tool_use.jinja"), "tools {{ tools | length }}");
    TokenizerBundle b = TokenizerBundle.load(dir);
    assertEquals("<|im_end|>", b.eosToken());
    assertEquals(151645, b.eosTokenId());
    assertEquals("<|endoftext|>", b.padToken());
    assertEquals(List.of("default", "tool_use"), List.copyOf(b.chatTemplates().keySet()));
    List<Map<String, Object>> messages = List.of(Map.of("role", "user", "content", "x"));
    assertEquals(
        "main <|im_end|>",
        b.chatTemplate()
            .render(new ChatTemplate.Input(messages, null, null, false, false, Map.of())));
    assertEquals(
        "tools 0",
        b.chatTemplate()
            .render(new ChatTemplate.Input(messages, List.of(), null, false, false, Map.of())));
    assertEquals("Wait.", b.tokenizer().decode(b.tokenizer().encode("Wait .", false), false, true));
  }

  @Test
  void loadSharedGivesOneBundlePerDirectoryUntilItsFilesChange(@TempDir Path dir) throws Exception {
    Files.createSymbolicLink(
        dir.resolve("tokenizer.json"), TokenizerFixtures.dir("qwen3").resolve("tokenizer.json"));
    Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": \"one\"}");
    TokenizerBundle a = TokenizerBundle.loadShared(dir);
    assertSame(a, TokenizerBundle.loadShared(dir));
    assertSame(a, TokenizerBundle.loadShared(dir.resolve("."))); // the same real directory
    assertNotSame(a, TokenizerBundle.load(dir)); // load itself stays a fresh copy
    // a changed file (here its size) is a new bundle, never the stale one
    Files.writeString(dir.resolve("tokenizer_config.json"), "{\"chat_template\": \"two!\"}");
    TokenizerBundle b = TokenizerBundle.loadShared(dir);
    assertNotSame(a, b);
    assertEquals("two!", b.chatTemplates().get("default"));
    assertEquals("one", a.chatTemplates().get("default"));
    // so is a file added next to them (transformers' newer template file)
    Files.writeString(dir.resolve("chat_template.jinja"), "three");
    assertEquals("three", TokenizerBundle.loadShared(dir).chatTemplates().get("default"));
    assertThrows(
        IllegalArgumentException.class, () -> TokenizerBundle.loadShared(dir.resolve("none")));
  }

  @Test
  void missingOrBrokenFilesAreClearErrors(@TempDir Path dir) throws Exception {
    assertThrows(IllegalArgumentException.class, () -> TokenizerBundle.load(dir));
    Files.writeString(dir.resolve("tokenizer.json"), "{not json");
    assertThrows(IllegalArgumentException.class, () -> TokenizerBundle.load(dir));
    assertThrows(
        IllegalArgumentException.class,
        () -> TokenizerFixtures.bundle("qwen3").tokenizer().decode(new int[] {-5}, false, true));
  }
}
