package dev.troupe.gateway.routes;

import dev.troupe.gateway.http.ApiRoute;
import dev.troupe.gateway.workers.ModelDirectory;
import java.util.List;

/**
 * The OpenAI/vLLM endpoints served by every gateway, for {@code ApiRoutes.addAll}:
 *
 * <pre>{@code
 * ModelDirectory models = ModelDirectory.sharded(system, servedModels, settings.askTimeout());
 * Route route = ApiRoutes.builder(settings).addAll(StandardRoutes.of(models)).add(...).build();
 * GatewayServer.bind(system, settings, route);
 * }</pre>
 */
public final class StandardRoutes {
  private StandardRoutes() {}

  public static List<ApiRoute> of(ModelDirectory models) {
    return List.of(
        new ChatCompletionsRoute(models),
        new ModelsRoute(models),
        new TokenizeRoute(models),
        new DetokenizeRoute(models),
        new HealthRoute(models::healthy),
        new VersionRoute());
  }
}
