package dev.troupe.engine.tokenizer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The bytes of each token, as the grammar engine sees them, concatenate to the decoded text. */
class TokenBytesTest {

  private static final List<String> TEXTS =
      List.of(
          "Hello, world!",
          "  leading spaces and\ttabs\nnewlines\r\n",
          "ünïcödé 中文 emoji 🙂 and combining e\u0301",
          "{\"json\": [1, 2.5e-3, null], \"k\": \"v\\u00e9\"}",
          "<think>reasoning</think><tool_call>{}</tool_call>");

  @ParameterizedTest
  @ValueSource(strings = {"qwen3", "llama3"})
  void byteLevelTokensConcatenateToTheText(String model) {
    HfTokenizer tok = (HfTokenizer) TokenizerFixtures.bundle(model).tokenizer();
    for (String text : TEXTS) {
      int[] ids = tok.encode(text, false);
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      for (int id : ids) out.writeBytes(tok.tokenBytes(id));
      assertEquals(tok.decode(ids, false, false), out.toString(StandardCharsets.UTF_8), text);
    }
  }

  @Test
  void sentencePieceWithByteFallback() {
    String json =
        """
        {"version":"1.0","truncation":null,"padding":null,
         "added_tokens":[
           {"id":0,"content":"<unk>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
           {"id":1,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true},
           {"id":2,"content":"</s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],
         "normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]},
         "pre_tokenizer":null,"post_processor":null,
         "decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
         "model":{"type":"BPE","dropout":null,"unk_token":"<unk>","continuing_subword_prefix":null,"end_of_word_suffix":null,
           "fuse_unk":true,"byte_fallback":true,"ignore_merges":false,
           "vocab":VOCAB,"merges":[["▁","h"],["l","l"],["▁h","ll"]]}}
        """;
    StringBuilder vocab = new StringBuilder("{\"<unk>\":0,\"<s>\":1,\"</s>\":2");
    for (int b = 0; b < 256; b++) vocab.append(String.format(",\"<0x%02X>\":%d", b, 3 + b));
    String[] pieces = {"▁", "h", "l", "o", "▁h", "ll", "▁hll"};
    for (int i = 0; i < pieces.length; i++)
      vocab.append(",\"").append(pieces[i]).append("\":").append(259 + i);
    vocab.append('}');
    HfTokenizer tok =
        HfTokenizer.fromBytes(json.replace("VOCAB", vocab).getBytes(StandardCharsets.UTF_8), false);
    assertArrayEquals(new byte[] {' ', 'h'}, tok.tokenBytes(263));
    assertArrayEquals(new byte[] {(byte) 0xC3}, tok.tokenBytes(3 + 0xC3));
    int[] ids = tok.encode("hllé", false);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int id : ids) out.writeBytes(tok.tokenBytes(id));
    // the Metaspace prefix space is the one thing the decoder strips and the bytes keep
    assertEquals(" hllé", out.toString(StandardCharsets.UTF_8));
    assertEquals("hllé", tok.decode(ids, false, false));
  }
}
