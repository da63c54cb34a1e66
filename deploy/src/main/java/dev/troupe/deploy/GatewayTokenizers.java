package dev.troupe.deploy;

import dev.troupe.engine.input.PromptEncoder;
import dev.troupe.engine.tokenizer.TokenizerBundle;
import dev.troupe.gateway.replicas.PromptTokenizer;
import dev.troupe.protocol.cluster.GenerationRequest;
import dev.troupe.protocol.cluster.ServedModels;
import dev.troupe.protocol.cluster.ServedModels.ServedModel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gateway's {@link PromptTokenizer}: for each served model whose tokenizer files this node can
 * read (or the built-in demo model), the workers' own prompt preparation ({@link PromptEncoder}:
 * template, bound, tokenizer, truncation), loaded on first use. A model whose files are not here (a
 * gateway-only node on another machine) is routed by load alone, and so is a prompt the encoder
 * refuses: the worker then reports the error in its words.
 */
final class GatewayTokenizers implements PromptTokenizer {
  private static final Logger log = LoggerFactory.getLogger(GatewayTokenizers.class);
  private final ServedModels models;
  private final boolean allowRequestTemplate;
  private final Map<String, Optional<PromptEncoder>> encoders = new ConcurrentHashMap<>();

  /**
   * @param allowRequestTemplate the workers' {@code allow-request-chat-template}
   */
  GatewayTokenizers(ServedModels models, boolean allowRequestTemplate) {
    this.models = models;
    this.allowRequestTemplate = allowRequestTemplate;
  }

  @Override
  public int[] promptTokenIds(String model, int maxModelLen, GenerationRequest request) {
    Optional<PromptEncoder> encoder = encoders.computeIfAbsent(model, this::load);
    if (encoder.isEmpty()) return null;
    try {
      return encoder.get().encode(request, maxModelLen);
    } catch (RuntimeException | StackOverflowError | OutOfMemoryError e) {
      return null; // the worker refuses it with its own message
    }
  }

  private Optional<PromptEncoder> load(String name) {
    Optional<ServedModel> model = models.find(name);
    if (model.isEmpty()) return Optional.empty();
    try {
      TokenizerBundle text;
      if (model.get().isDemo()) {
        text = TokenizerBundle.demo();
      } else {
        Path dir = Path.of(model.get().path());
        if (!Files.isDirectory(dir)) {
          log.info(
              "model {}: {} is not on this node; its requests are routed by load alone", name, dir);
          return Optional.empty();
        }
        text = TokenizerBundle.loadShared(dir); // the workers' own, when they run here
      }
      if (model.get().chatTemplate() != null)
        text = text.withChatTemplate(model.get().chatTemplate()); // as the workers serve it
      return Optional.of(new PromptEncoder(text, allowRequestTemplate));
    } catch (RuntimeException e) {
      log.warn("model {}: cannot load its tokenizer here; routed by load alone", name, e);
      return Optional.empty();
    }
  }
}
