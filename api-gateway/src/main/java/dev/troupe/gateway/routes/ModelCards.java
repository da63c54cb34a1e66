package dev.troupe.gateway.routes;

import dev.troupe.gateway.http.RequestIds;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ModelFacts;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.protocol.api.models.ModelList.ModelCard;
import dev.troupe.protocol.api.models.ModelList.ModelPermission;
import dev.troupe.protocol.cluster.TrainableModelProtocol.ModelInfo;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The model cards of {@code GET /v1/models} and {@code GET /v1/models/{id}}, vLLM's shape: a served
 * model under one of its names (each alias has a card of its own, as vLLM lists every served name;
 * {@code max_model_len} null while its workers have not answered), or a trainable model as vLLM
 * lists a LoRA adapter ({@code root} = {@code <entity>/<project>/<name>}, {@code parent} = the base
 * model).
 */
final class ModelCards {
  /** How long a card waits for a model's facts before it is written without them. */
  static final Duration LISTING_WAIT = Duration.ofSeconds(2);

  private ModelCards() {}

  /** The model's facts, or null when its workers do not answer within {@link #LISTING_WAIT}. */
  static CompletableFuture<ModelFacts> facts(ModelCatalog models, ServedModel m) {
    return models
        .facts(m)
        .toCompletableFuture()
        .copy()
        .completeOnTimeout(null, LISTING_WAIT.toMillis(), TimeUnit.MILLISECONDS)
        .exceptionally(e -> null);
  }

  /**
   * @param name the name the card lists it under: {@code m}'s name or one of its aliases
   */
  static ModelCard served(ServedModel m, String name, ModelFacts facts) {
    return new ModelCard(
        name,
        "model",
        m.created(),
        "troupe",
        m.root(),
        m.parent(),
        facts == null ? null : facts.maxModelLen(),
        permission(m.created()));
  }

  /**
   * @param baseFacts the base model's facts, or null
   */
  static ModelCard trained(ModelInfo info, ModelFacts baseFacts) {
    long created = info.createdAtMillis() / 1000;
    return new ModelCard(
        info.id(),
        "model",
        created,
        "troupe",
        info.entity() + "/" + info.project() + "/" + info.name(),
        info.baseModel(),
        baseFacts == null ? null : baseFacts.maxModelLen(),
        permission(created));
  }

  private static List<ModelPermission> permission(long created) {
    return List.of(ModelPermission.standard("modelperm-" + RequestIds.random(), created));
  }
}
