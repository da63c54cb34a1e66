package dev.troupe.gateway.routes;

import static org.apache.pekko.http.javadsl.server.Directives.completeWithFuture;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.pathEndOrSingleSlash;
import static org.apache.pekko.http.javadsl.server.Directives.pathPrefix;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ModelFacts;
import dev.troupe.gateway.replicas.ServedModel;
import dev.troupe.protocol.api.models.ModelList;
import dev.troupe.protocol.api.models.ModelList.ModelCard;
import dev.troupe.protocol.cluster.TrainableModelProtocol;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /v1/models}: the served models as OpenAI's list with vLLM's card fields, one card per
 * name a model is served under (its name, then its aliases, as vLLM lists each {@code
 * --served-model-name}). A model whose workers have not answered yet is listed with {@code
 * max_model_len: null}. Trainable models follow as vLLM lists LoRA adapters: {@code id} = the
 * model's UUID (its latest step), {@code root} = {@code <entity>/<project>/<name>}, {@code parent}
 * = the base model; left out when the registry does not answer in time.
 */
public final class ModelsRoute implements ApiRoute {
  /** Trainable models listed at most (the registry is paged; this is a listing, not an export). */
  private static final int MAX_TRAINED = 1000;

  private final ModelCatalog models;

  public ModelsRoute(ModelCatalog models) {
    this.models = models;
  }

  @Override
  public Route route() {
    return pathPrefix(
        "v1", () -> pathPrefix("models", () -> pathEndOrSingleSlash(() -> get(this::list))));
  }

  private Route list() {
    List<CompletableFuture<ModelFacts>> facts = new ArrayList<>();
    // a model whose workers are down is listed without its context length, not waited for
    for (ServedModel m : models.models()) facts.add(ModelCards.facts(models, m));
    CompletableFuture<List<TrainableModelProtocol.ModelInfo>> trained =
        models.trainedModels() == null
            ? CompletableFuture.completedFuture(List.of())
            : models
                .trainedModels()
                .list(MAX_TRAINED)
                .toCompletableFuture()
                .completeOnTimeout(
                    List.of(), ModelCards.LISTING_WAIT.toMillis(), TimeUnit.MILLISECONDS)
                .exceptionally(e -> List.of());
    CompletableFuture<?>[] all = new CompletableFuture<?>[facts.size() + 1];
    for (int i = 0; i < facts.size(); i++) all[i] = facts.get(i);
    all[facts.size()] = trained;
    return completeWithFuture(
        CompletableFuture.allOf(all)
            .thenApply(
                x -> {
                  List<ModelCard> cards = new ArrayList<>();
                  Map<String, ModelFacts> byName = new HashMap<>();
                  for (int i = 0; i < models.models().size(); i++) {
                    ServedModel m = models.models().get(i);
                    ModelFacts f = facts.get(i).join();
                    if (f != null) byName.put(m.name(), f);
                    for (String name : m.names()) cards.add(ModelCards.served(m, name, f));
                  }
                  for (TrainableModelProtocol.ModelInfo info : trained.join())
                    cards.add(ModelCards.trained(info, byName.get(info.baseModel())));
                  return JsonBodies.response(StatusCodes.OK, ModelList.of(cards));
                }));
  }
}
