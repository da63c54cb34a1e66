package dev.troupe.engine.tokenizer;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.troupe.engine.Tokenizer;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * A {@link Tokenizer} over the real Hugging Face {@code tokenizers} library (Rust, through DJL's
 * JNI binding, whose jar bundles the native library for linux-x86_64/aarch64, macOS arm64 and
 * Windows). Encoding and decoding are the library's own, so added/special tokens are split out
 * first and the {@code post_processor} runs when special tokens are requested, exactly as in {@code
 * transformers}' fast tokenizers.
 *
 * <p>What is ours: {@code clean_up_tokenization_spaces} (transformers applies it in Python after
 * the Rust decode, so we do too), the vocabulary maps (read from {@code tokenizer.json}), lone
 * surrogates in input (replaced with U+FFFD before encoding: a Java string may hold them, Rust
 * strings cannot, and Python's tokenizer would raise; replacement is what a browser's TextEncoder
 * does) and the streaming detokenizer ({@link PrefixOffsetDetokenizer}).
 *
 * <p>{@code spaces_between_special_tokens} only exists in transformers' slow (Python) tokenizers;
 * for a {@code tokenizer.json} the fast path ignores it, so does this class (as vLLM does).
 *
 * <p>Thread-safe: the Rust tokenizer is immutable after loading. The native handle is freed when
 * the object is garbage collected (DJL's finalizer); tokenizers live as long as their model.
 */
public final class HfTokenizer implements Tokenizer {

  static {
    // DJL picks a CUDA build of the library when it sees a GPU and would download it; the CPU
    // build bundled in the jar is the one we want everywhere (tokenizing never runs on a GPU).
    if (System.getenv("RUST_FLAVOR") == null && System.getProperty("RUST_FLAVOR") == null) {
      System.setProperty("RUST_FLAVOR", "cpu");
    }
    // Never reach for the network (DJL downloads native builds for unknown platforms).
    if (System.getProperty("ai.djl.offline") == null) System.setProperty("ai.djl.offline", "true");
    skipDjlCudaProbe();
  }

  /**
   * DJL picks its native library's flavour by probing for GPUs (CudaUtils: JNA-loads libcudart,
   * calls cudaGetDeviceCount) before honouring RUST_FLAVOR, and WARNs twice on a machine with the
   * CUDA runtime but no driver ("Failed to detect GPU count"). The flavour is cpu whatever it
   * finds, so the probe is kept from loading anything: CudaUtils loads no library while {@code
   * ai.djl.util.cuda.fork} is set, and with the property cleared again it then answers 0 GPUs
   * without forking a JVM. Nothing else here uses DJL's GPU probe (Troupe's own is {@code
   * Devices}).
   */
  private static void skipDjlCudaProbe() {
    String fork = "ai.djl.util.cuda.fork";
    if (System.getProperty(fork) != null) return; // someone chose DJL's behaviour: keep it
    System.setProperty(fork, "true");
    try {
      Class.forName("ai.djl.util.cuda.CudaUtils", true, HfTokenizer.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      // a DJL without it probes nothing
    } finally {
      System.clearProperty(fork);
    }
  }

  private final HuggingFaceTokenizer hf;
  private final boolean cleanUpTokenizationSpaces;
  private final String[] idToToken;
  private final Map<String, Integer> tokenToId;
  private final Set<Integer> specialIds;
  private final TokenBytes tokenBytes;

  private HfTokenizer(
      HuggingFaceTokenizer hf,
      boolean cleanUpTokenizationSpaces,
      String[] idToToken,
      Map<String, Integer> tokenToId,
      Set<Integer> specialIds,
      TokenBytes tokenBytes) {
    this.hf = hf;
    this.tokenBytes = tokenBytes;
    this.cleanUpTokenizationSpaces = cleanUpTokenizationSpaces;
    this.idToToken = idToToken;
    this.tokenToId = tokenToId;
    this.specialIds = Set.copyOf(specialIds);
  }

  /** Loads {@code tokenizer.json}; the clean-up flag comes from {@code tokenizer_config.json}. */
  public static HfTokenizer load(Path tokenizerJson, boolean cleanUpTokenizationSpaces) {
    try {
      return fromBytes(Files.readAllBytes(tokenizerJson), cleanUpTokenizationSpaces);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + tokenizerJson, e);
    }
  }

  /** Builds a tokenizer from the bytes of a {@code tokenizer.json}. */
  public static HfTokenizer fromBytes(byte[] tokenizerJson, boolean cleanUpTokenizationSpaces) {
    // the Rust parse and our vocabulary read are independent: overlap them
    CompletableFuture<Vocab> vocab = CompletableFuture.supplyAsync(() -> Vocab.read(tokenizerJson));
    HuggingFaceTokenizer hf;
    try {
      hf =
          HuggingFaceTokenizer.newInstance(
              new ByteArrayInputStream(tokenizerJson),
              Map.of("truncation", "false", "padding", "false", "addSpecialTokens", "false"));
    } catch (IOException | RuntimeException e) {
      vocab.cancel(false);
      throw new IllegalArgumentException("invalid tokenizer.json: " + e.getMessage(), e);
    }
    Vocab v;
    try {
      v = vocab.join();
    } catch (CompletionException e) {
      hf.close();
      throw e.getCause() instanceof RuntimeException r ? r : e;
    }
    return new HfTokenizer(
        hf, cleanUpTokenizationSpaces, v.idToToken, v.tokenToId, v.specialIds, v.tokenBytes);
  }

  @Override
  public int[] encode(String text, boolean addSpecialTokens) {
    Encoding encoding = hf.encode(replaceLoneSurrogates(text), addSpecialTokens, false);
    long[] ids = encoding.getIds();
    int[] out = new int[ids.length];
    for (int i = 0; i < ids.length; i++) out[i] = (int) ids[i];
    return out;
  }

  @Override
  public String decode(int[] ids, boolean skipSpecialTokens, boolean spacesBetweenSpecialTokens) {
    String text = rawDecode(ids, 0, ids.length, skipSpecialTokens);
    return cleanUpTokenizationSpaces ? cleanUpTokenization(text) : text;
  }

  /**
   * The library's decode of {@code ids[from, to)} without transformers' space clean-up. Ids outside
   * the tokenizer's vocabulary have no text and are skipped, as Hugging Face's decode skips ids it
   * cannot map: a model's embedding matrix is often padded past the tokenizer (Qwen3: 151,936 rows
   * for 151,669 tokens), and such an id can be sampled; vLLM decodes it to "". A negative id is no
   * token at all: an {@link IllegalArgumentException}.
   */
  String rawDecode(int[] ids, int from, int to, boolean skipSpecialTokens) {
    long[] longs = new long[to - from];
    int n = 0;
    for (int i = from; i < to; i++) {
      int id = ids[i];
      if (id < 0) throw new IllegalArgumentException("negative token id " + id);
      if (id < idToToken.length) longs[n++] = id;
    }
    if (n == 0) return "";
    return hf.decode(
        n == longs.length ? longs : java.util.Arrays.copyOf(longs, n), skipSpecialTokens);
  }

  @Override
  public String idToToken(int id) {
    return id >= 0 && id < idToToken.length ? idToToken[id] : null;
  }

  @Override
  public OptionalInt tokenToId(String token) {
    Integer id = tokenToId.get(token);
    return id == null ? OptionalInt.empty() : OptionalInt.of(id);
  }

  @Override
  public int vocabSize() {
    return idToToken.length;
  }

  @Override
  public Set<Integer> specialTokenIds() {
    return specialIds;
  }

  @Override
  public byte[] tokenBytes(int id) {
    return id >= 0 && id < idToToken.length ? tokenBytes.of(id) : null;
  }

  /** Whether decode applies transformers' {@code clean_up_tokenization}. */
  public boolean cleanUpTokenizationSpaces() {
    return cleanUpTokenizationSpaces;
  }

  @Override
  public IncrementalDetokenizer newDetokenizer(
      int[] promptIds, boolean skipSpecialTokens, boolean spacesBetweenSpecialTokens) {
    return new PrefixOffsetDetokenizer(this, promptIds, skipSpecialTokens);
  }

  /**
   * transformers' {@code PreTrainedTokenizerBase.clean_up_tokenization}: removes the space the old
   * BERT-era tokenizers put before punctuation and English contractions.
   */
  static String cleanUpTokenization(String s) {
    return s.replace(" .", ".")
        .replace(" ?", "?")
        .replace(" !", "!")
        .replace(" ,", ",")
        .replace(" ' ", "'")
        .replace(" n't", "n't")
        .replace(" 'm", "'m")
        .replace(" 's", "'s")
        .replace(" 've", "'ve")
        .replace(" 're", "'re");
  }

  /** Replaces each unpaired UTF-16 surrogate with U+FFFD (see the class comment). */
  static String replaceLoneSurrogates(String s) {
    StringBuilder sb = null;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      boolean lone;
      if (Character.isHighSurrogate(c)) {
        lone = i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1));
        if (!lone) {
          if (sb != null) sb.append(c).append(s.charAt(i + 1));
          i++;
          continue;
        }
      } else {
        lone = Character.isLowSurrogate(c);
      }
      if (lone && sb == null) sb = new StringBuilder(s.length()).append(s, 0, i);
      if (sb != null) sb.append(lone ? '\uFFFD' : c);
    }
    return sb == null ? s : sb.toString();
  }

  /** The id ↔ token maps of {@code model.vocab} and {@code added_tokens}, read by streaming. */
  private record Vocab(
      String[] idToToken,
      Map<String, Integer> tokenToId,
      Set<Integer> specialIds,
      TokenBytes tokenBytes) {

    static Vocab read(byte[] json) {
      Map<String, Integer> tokenToId = new HashMap<>();
      Set<Integer> special = new HashSet<>();
      Map<Integer, String> added = new HashMap<>();
      TokenBytes.Kind kind = null;
      boolean[] byteFallback = {false};
      // 150k vocabulary keys arrive as field names: canonicalizing and interning them is the
      // slowest part of parsing, and they are used once
      JsonFactory factory =
          JsonFactory.builder()
              .disable(JsonFactory.Feature.CANONICALIZE_FIELD_NAMES)
              .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
              .build();
      try (JsonParser p = factory.createParser(json)) {
        expect(p.nextToken(), JsonToken.START_OBJECT);
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String field = p.currentName();
          p.nextToken();
          if (field.equals("model")) readModel(p, tokenToId, byteFallback);
          else if (field.equals("added_tokens")) readAdded(p, added, special);
          else if (field.equals("decoder")) kind = TokenBytes.kindOf(p);
          else p.skipChildren();
        }
      } catch (IOException e) {
        throw new IllegalArgumentException("invalid tokenizer.json: " + e.getMessage(), e);
      }
      added.forEach((id, content) -> tokenToId.put(content, id));
      int size = 0;
      for (int id : tokenToId.values()) size = Math.max(size, id + 1);
      String[] idToToken = new String[size];
      tokenToId.forEach((token, id) -> idToToken[id] = token);
      // not Map.copyOf: its linear probing is pathologically slow for 150k BPE tokens
      TokenBytes bytes = new TokenBytes(kind, byteFallback[0], added.keySet(), idToToken);
      return new Vocab(idToToken, Collections.unmodifiableMap(tokenToId), special, bytes);
    }

    private static void readModel(
        JsonParser p, Map<String, Integer> tokenToId, boolean[] byteFallback) throws IOException {
      expect(p.currentToken(), JsonToken.START_OBJECT);
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken t = p.nextToken();
        if (field.equals("vocab") && t == JsonToken.START_OBJECT) {
          while (p.nextToken() == JsonToken.FIELD_NAME) {
            String token = p.currentName();
            p.nextToken();
            tokenToId.put(token, p.getIntValue());
          }
        } else if (field.equals("vocab") && t == JsonToken.START_ARRAY) {
          // Unigram: [[piece, score], ...], the id is the position
          int id = 0;
          while (p.nextToken() == JsonToken.START_ARRAY) {
            p.nextToken();
            tokenToId.put(p.getText(), id++);
            while (p.nextToken() != JsonToken.END_ARRAY) p.skipChildren();
          }
        } else if (field.equals("byte_fallback") && t == JsonToken.VALUE_TRUE) {
          byteFallback[0] = true;
        } else {
          p.skipChildren();
        }
      }
    }

    private static void readAdded(JsonParser p, Map<Integer, String> added, Set<Integer> special)
        throws IOException {
      expect(p.currentToken(), JsonToken.START_ARRAY);
      while (p.nextToken() == JsonToken.START_OBJECT) {
        Integer id = null;
        String content = null;
        boolean isSpecial = false;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String field = p.currentName();
          p.nextToken();
          switch (field) {
            case "id" -> id = p.getIntValue();
            case "content" -> content = p.getText();
            case "special" -> isSpecial = p.getBooleanValue();
            default -> p.skipChildren();
          }
        }
        if (id == null || content == null)
          throw new IllegalArgumentException(
              "invalid tokenizer.json: added token without id/content");
        added.put(id, content);
        if (isSpecial) special.add(id);
      }
    }

    private static void expect(JsonToken actual, JsonToken expected) {
      if (actual != expected)
        throw new IllegalArgumentException(
            "invalid tokenizer.json: expected " + expected + " but found " + actual);
    }
  }
}
