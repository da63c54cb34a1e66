package dev.troupe.engine.tokenizer;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.engine.ChatTemplate;
import dev.troupe.engine.Tokenizer;
import dev.troupe.engine.template.JinjaChatTemplate;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.ref.WeakReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.GZIPInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A model's text side, loaded from its Hugging Face directory: the tokenizer ({@code
 * tokenizer.json}), the chat template and special tokens ({@code tokenizer_config.json}).
 *
 * @param tokenizer the exact Hugging Face tokenizer
 * @param chatTemplate the model's chat template(s) (with several named ones, {@code tool_use} is
 *     used when tools are given, else {@code default}), or null when the model has none
 * @param chatTemplates every template in the config by name (a single string is {@code default})
 * @param specialTokens transformers' {@code special_tokens_map}: {@code bos_token}, {@code
 *     eos_token}, {@code unk_token}, {@code sep_token}, {@code pad_token}, {@code cls_token},
 *     {@code mask_token} (String) and {@code additional_special_tokens} (List of String), only
 *     those set; templates see these as variables
 * @param eosTokenId the id of {@code eos_token}, or null when the config names none
 */
public record TokenizerBundle(
    Tokenizer tokenizer,
    ChatTemplate chatTemplate,
    Map<String, String> chatTemplates,
    Map<String, Object> specialTokens,
    Integer eosTokenId) {

  /** transformers' {@code SPECIAL_TOKENS_ATTRIBUTES}, in its order. */
  private static final List<String> SPECIAL_TOKEN_ATTRIBUTES =
      List.of(
          "bos_token",
          "eos_token",
          "unk_token",
          "sep_token",
          "pad_token",
          "cls_token",
          "mask_token",
          "additional_special_tokens");

  private static final Logger LOG = LoggerFactory.getLogger(TokenizerBundle.class);

  private static final String DEMO_RESOURCES = "/dev/troupe/engine/demo/";

  public TokenizerBundle {
    if (tokenizer == null) throw new IllegalArgumentException("tokenizer is required");
    // insertion order kept: it is transformers' order, and templates may iterate the maps
    chatTemplates = Collections.unmodifiableMap(new LinkedHashMap<>(chatTemplates));
    specialTokens = Collections.unmodifiableMap(new LinkedHashMap<>(specialTokens));
  }

  /**
   * Loads a model directory as transformers does: {@code tokenizer.json}; {@code
   * tokenizer_config.json} (special tokens, {@code chat_template}, clean-up flag); special tokens
   * missing there from {@code special_tokens_map.json}; and the chat template from {@code
   * chat_template.jinja} (plus named ones in {@code additional_chat_templates/*.jinja}) or {@code
   * chat_template.json} when present, which newer transformers versions save instead of the config
   * entry and which take precedence over it.
   */
  public static TokenizerBundle load(Path modelDir) {
    Path tokenizerJson = modelDir.resolve("tokenizer.json");
    if (!Files.isRegularFile(tokenizerJson))
      throw new IllegalArgumentException("no tokenizer.json in " + modelDir);
    Path configPath = modelDir.resolve("tokenizer_config.json");
    try {
      Map<String, Object> config =
          Files.isRegularFile(configPath)
              ? new LinkedHashMap<>(
                  parseConfig(Files.readAllBytes(configPath), configPath.toString()))
              : new LinkedHashMap<>();
      Path specialsPath = modelDir.resolve("special_tokens_map.json");
      if (Files.isRegularFile(specialsPath)) {
        parseConfig(Files.readAllBytes(specialsPath), specialsPath.toString())
            .forEach(
                (k, v) -> {
                  if (SPECIAL_TOKEN_ATTRIBUTES.contains(k) && config.get(k) == null)
                    config.put(k, v);
                });
      }
      Object template = templateFiles(modelDir);
      if (template != null) config.put("chat_template", template);
      return build(Files.readAllBytes(tokenizerJson), config, configPath.toString());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read tokenizer files in " + modelDir, e);
    }
  }

  /**
   * {@link #load}, shared within this JVM: while a bundle of {@code modelDir} is in use and the
   * files {@code load} reads are unchanged (same real path, sizes and modification times), every
   * caller gets that one bundle. A node serves a model and also tokenizes its prompts for routing
   * (the gateway) and may train on it: without sharing, each of them holds its own tokenizer, and
   * Llama 3's is ~30 MB of native memory in the Rust library plus ~35 MB of vocabulary maps on the
   * heap (docs/benchmarks.md, "Resident memory"). A bundle is immutable and thread-safe (as {@link
   * #demo()}'s, shared the same way). Held weakly: once nobody uses it, it is collected as an
   * unshared one would be, and the next call loads the directory afresh.
   */
  public static TokenizerBundle loadShared(Path modelDir) {
    List<Object> key = Shared.key(modelDir);
    if (key == null) return load(modelDir); // unreadable: load's own error
    synchronized (Shared.LOCKS.computeIfAbsent(key, k -> new Object())) {
      TokenizerBundle b = Shared.get(key);
      if (b == null) {
        b = load(modelDir);
        Shared.put(key, b);
      }
      return b;
    }
  }

  /** The bundles {@link #loadShared} hands out, by directory and file stamps. */
  private static final class Shared {
    /** Files and folders {@link #load} reads. */
    static final List<String> FILES =
        List.of(
            "tokenizer.json",
            "tokenizer_config.json",
            "special_tokens_map.json",
            "chat_template.jinja",
            "chat_template.json",
            "additional_chat_templates");

    /** One lock per key, so two users of one directory load it once (a few keys per node). */
    static final Map<List<Object>, Object> LOCKS = new ConcurrentHashMap<>();

    private static final Map<List<Object>, WeakReference<TokenizerBundle>> BUNDLES =
        new HashMap<>();

    static synchronized TokenizerBundle get(List<Object> key) {
      BUNDLES.values().removeIf(r -> r.get() == null);
      WeakReference<TokenizerBundle> r = BUNDLES.get(key);
      return r == null ? null : r.get();
    }

    static synchronized void put(List<Object> key, TokenizerBundle b) {
      BUNDLES.put(key, new WeakReference<>(b));
    }

    /**
     * The real path, then each file's size and modification time (or its absence); null when the
     * directory cannot be read.
     */
    static List<Object> key(Path modelDir) {
      List<Object> key = new ArrayList<>();
      try {
        Path dir = modelDir.toRealPath();
        key.add(dir.toString());
        for (String name : FILES) {
          Path f = dir.resolve(name);
          stamp(f, key);
          if (Files.isDirectory(f))
            try (var files = Files.list(f)) {
              for (Path g : files.sorted().toList()) stamp(g, key);
            }
        }
      } catch (IOException e) {
        return null;
      }
      return List.copyOf(key);
    }

    private static void stamp(Path f, List<Object> key) throws IOException {
      key.add(f.getFileName().toString());
      if (!Files.exists(f)) {
        key.add("absent");
        return;
      }
      BasicFileAttributes a = Files.readAttributes(f, BasicFileAttributes.class);
      key.add(a.size());
      key.add(a.lastModifiedTime().toMillis());
    }
  }

  /** The chat template(s) saved as separate files, in the config's shape, or null. */
  private static Object templateFiles(Path modelDir) throws IOException {
    Path jinja = modelDir.resolve("chat_template.jinja");
    Path json = modelDir.resolve("chat_template.json");
    String main = null;
    if (Files.isRegularFile(jinja)) {
      main = Files.readString(jinja);
    } else if (Files.isRegularFile(json)) {
      Object value = parseConfig(Files.readAllBytes(json), json.toString()).get("chat_template");
      if (!(value instanceof String)) return value; // a list of named templates, or null
      main = (String) value;
    }
    List<Map<String, Object>> named = new ArrayList<>();
    Path extraDir = modelDir.resolve("additional_chat_templates");
    if (Files.isDirectory(extraDir)) {
      try (var files = Files.list(extraDir)) {
        for (Path f : files.sorted().toList()) {
          String file = f.getFileName().toString();
          if (file.endsWith(".jinja"))
            named.add(
                Map.of(
                    "name", file.substring(0, file.length() - 6), "template", Files.readString(f)));
        }
      }
    }
    if (named.isEmpty()) return main;
    if (main != null) named.add(0, Map.of("name", "default", "template", main));
    return named;
  }

  /**
   * The embedded demo model's tokenizer and chat template: Qwen3's ({@code Qwen/Qwen3-4B},
   * Apache-2.0), stored gzip-compressed on the classpath. Loaded once per JVM and shared (a bundle
   * is immutable and thread-safe; loading takes about a second).
   */
  public static TokenizerBundle demo() {
    return DemoHolder.DEMO;
  }

  /** Lazy, thread-safe initialization of the demo bundle on first use. */
  private static final class DemoHolder {
    static final TokenizerBundle DEMO =
        build(
            demoResource("tokenizer.json.gz"),
            parseConfig(demoResource("tokenizer_config.json.gz"), "demo tokenizer_config.json"),
            "demo tokenizer_config.json");
  }

  /**
   * A per-request {@code chat_template}: the name of one of the model's templates, or template
   * source, rendered with this tokenizer's special tokens (as transformers does).
   */
  public ChatTemplate compileTemplate(String nameOrSource) {
    String named = chatTemplates.get(nameOrSource);
    return JinjaChatTemplate.of(named != null ? named : nameOrSource, specialTokens);
  }

  /**
   * This bundle served with {@code source} as its chat template instead of the model's (vLLM's
   * {@code --chat-template}); the model's named templates stay reachable by name.
   */
  public TokenizerBundle withChatTemplate(String source) {
    return new TokenizerBundle(
        tokenizer,
        JinjaChatTemplate.of(source, specialTokens),
        chatTemplates,
        specialTokens,
        eosTokenId);
  }

  /** The special token {@code name} ({@code bos_token}, ...) as a string, or null when unset. */
  public String specialToken(String name) {
    return specialTokens.get(name) instanceof String s ? s : null;
  }

  public String bosToken() {
    return specialToken("bos_token");
  }

  public String eosToken() {
    return specialToken("eos_token");
  }

  public String padToken() {
    return specialToken("pad_token");
  }

  private static TokenizerBundle build(
      byte[] tokenizerJson, Map<String, Object> config, String configName) {
    boolean cleanUp = Boolean.TRUE.equals(config.get("clean_up_tokenization_spaces"));
    HfTokenizer tokenizer = HfTokenizer.fromBytes(tokenizerJson, cleanUp);
    Map<String, Object> specials = specialTokens(config);
    Integer eosId = null;
    if (specials.get("eos_token") instanceof String eos) {
      OptionalInt id = tokenizer.tokenToId(eos);
      if (id.isEmpty())
        throw new IllegalArgumentException(
            configName + ": eos_token " + eos + " is not in the vocabulary");
      eosId = id.getAsInt();
    }
    Map<String, String> templates = chatTemplates(config.get("chat_template"), configName);
    JinjaChatTemplate template =
        templates.isEmpty() ? null : JinjaChatTemplate.of(templates, specials);
    if (template != null && template.compileError(false) != null)
      LOG.warn(
          "{}: the chat template does not compile, chat requests will fail: {}",
          configName,
          template.compileError(false).getMessage());
    return new TokenizerBundle(tokenizer, template, templates, specials, eosId);
  }

  private static Map<String, Object> parseConfig(byte[] json, String name) {
    try {
      return new ObjectMapper()
          .readValue(json, new TypeReference<LinkedHashMap<String, Object>>() {});
    } catch (IOException e) {
      throw new IllegalArgumentException("invalid " + name + ": " + e.getMessage(), e);
    }
  }

  /** Special tokens may be plain strings or serialized AddedToken objects ({@code content}). */
  private static Map<String, Object> specialTokens(Map<String, Object> config) {
    Map<String, Object> out = new LinkedHashMap<>();
    for (String attr : SPECIAL_TOKEN_ATTRIBUTES) {
      Object value = config.get(attr);
      if (value == null) continue;
      if (value instanceof List<?> list) {
        List<String> tokens = new ArrayList<>();
        for (Object item : list) tokens.add(tokenContent(item, attr));
        out.put(attr, List.copyOf(tokens));
      } else {
        out.put(attr, tokenContent(value, attr));
      }
    }
    return out;
  }

  private static String tokenContent(Object value, String attr) {
    if (value instanceof String s) return s;
    if (value instanceof Map<?, ?> m && m.get("content") instanceof String s) return s;
    throw new IllegalArgumentException("tokenizer_config.json: unreadable " + attr + ": " + value);
  }

  /** {@code chat_template}: a string, or a list of {@code {name, template}} (transformers). */
  private static Map<String, String> chatTemplates(Object value, String configName) {
    Map<String, String> out = new LinkedHashMap<>();
    if (value instanceof String s) {
      out.put("default", s);
    } else if (value instanceof List<?> list) {
      for (Object item : list) {
        if (item instanceof Map<?, ?> m
            && m.get("name") instanceof String name
            && m.get("template") instanceof String template) {
          out.put(name, template);
        } else {
          throw new IllegalArgumentException(
              configName + ": malformed chat_template entry " + item);
        }
      }
    } else if (value != null) {
      throw new IllegalArgumentException(configName + ": chat_template must be a string or list");
    }
    return out;
  }

  private static byte[] demoResource(String name) {
    try (InputStream raw = TokenizerBundle.class.getResourceAsStream(DEMO_RESOURCES + name)) {
      if (raw == null) throw new IllegalStateException("demo resource missing: " + name);
      try (InputStream in = new GZIPInputStream(raw, 1 << 16)) {
        return in.readAllBytes();
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read demo resource " + name, e);
    }
  }
}
