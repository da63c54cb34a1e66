package dev.troupe.gateway.routes;

import static org.apache.pekko.http.javadsl.server.Directives.completeWithFuture;
import static org.apache.pekko.http.javadsl.server.Directives.get;
import static org.apache.pekko.http.javadsl.server.Directives.pathPrefix;

import dev.troupe.gateway.http.ApiException;
import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.http.JsonBodies;
import dev.troupe.gateway.replicas.ModelCatalog;
import dev.troupe.gateway.replicas.ServedModel;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.PathMatchers;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code GET /v1/models/{id}} (OpenAI's retrieve, the SDKs' {@code models.retrieve}): the card
 * {@code GET /v1/models} lists under that id — a served model by its name or an alias, or a
 * trainable model by its UUID — else a 404 {@code NotFoundError} naming {@code model}. The id is
 * the rest of the path, decoded, so served names with a slash ({@code Qwen/Qwen3-0.6B}) work sent
 * as is or encoded ({@code %2F}).
 */
public final class RetrieveModelRoute implements ApiRoute {
  private final ModelCatalog models;

  public RetrieveModelRoute(ModelCatalog models) {
    this.models = models;
  }

  @Override
  public Route route() {
    return pathPrefix(
        PathMatchers.segment("v1").slash("models").slash(PathMatchers.remaining()),
        encoded -> get(() -> completeWithFuture(card(decoded(encoded)))));
  }

  private CompletionStage<HttpResponse> card(String id) {
    for (ServedModel m : models.models())
      if (m.isNamed(id))
        return ModelCards.facts(models, m)
            .thenApply(f -> JsonBodies.response(StatusCodes.OK, ModelCards.served(m, id, f)));
    if (models.trainedModels() == null) return CompletableFuture.failedFuture(notFound(id));
    return models
        .trainedModels()
        .info(id)
        .thenCompose(
            info -> {
              ServedModel base = null;
              for (ServedModel m : models.models()) if (m.name().equals(info.baseModel())) base = m;
              CompletableFuture<dev.troupe.gateway.replicas.ModelFacts> facts =
                  base == null
                      ? CompletableFuture.completedFuture(null)
                      : ModelCards.facts(models, base);
              return facts.thenApply(
                  f -> JsonBodies.response(StatusCodes.OK, ModelCards.trained(info, f)));
            });
  }

  private static String decoded(String path) {
    try {
      return URLDecoder.decode(path.replace("+", "%2B"), StandardCharsets.UTF_8);
    } catch (IllegalArgumentException malformed) {
      return path; // not a valid escape: no model has that name
    }
  }

  private static ApiException notFound(String id) {
    return ApiException.notFound("The model `" + id + "` does not exist.", "model");
  }
}
