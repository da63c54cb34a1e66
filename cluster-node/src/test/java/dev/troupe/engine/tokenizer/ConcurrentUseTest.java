package dev.troupe.engine.tokenizer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.Tokenizer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** One bundle serves many threads: encode, decode and render give the single-threaded results. */
class ConcurrentUseTest {

  @Test
  void tokenizerAndTemplateAreThreadSafe() throws Exception {
    TokenizerBundle bundle = TokenizerFixtures.bundle("qwen3");
    Tokenizer tok = bundle.tokenizer();
    List<String> texts = new ArrayList<>();
    for (int i = 0; i < 40; i++)
      texts.add("Request " + i + ": 日本語 " + "x".repeat(i) + " <|im_end|> 😀 " + i * 7919);
    List<int[]> expectedIds = new ArrayList<>();
    List<String> expectedPrompts = new ArrayList<>();
    for (String t : texts) {
      expectedIds.add(tok.encode(t, true));
      expectedPrompts.add(render(bundle, t));
    }
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int round = 0; round < 4; round++) {
        for (int i = 0; i < texts.size(); i++) {
          int k = i;
          futures.add(
              pool.submit(
                  () -> {
                    int[] ids = tok.encode(texts.get(k), true);
                    assertArrayEquals(expectedIds.get(k), ids);
                    assertEquals(texts.get(k), tok.decode(ids, false, true));
                    assertEquals(expectedPrompts.get(k), render(bundle, texts.get(k)));
                    return null;
                  }));
        }
      }
      for (Future<?> f : futures) f.get();
    } finally {
      pool.shutdownNow();
    }
  }

  private static String render(TokenizerBundle bundle, String text) {
    return bundle
        .chatTemplate()
        .render(
            new ChatTemplate.Input(
                List.of(Map.of("role", "user", "content", text)),
                null,
                null,
                true,
                false,
                Map.of()));
  }
}
