package dev.troupe.gateway.chat;

/**
 * Hears how a request's prefill leg went ({@link GenerationOwner}): for metrics and the route
 * header. Called on the owner's thread; implementations must be thread-safe and quick.
 */
public interface PrefillListener {

  /** The leg on {@code replica} ({@code model#i}) returned its KV handle after {@code nanos}. */
  void prefilled(String replica, long nanos);

  /**
   * The leg on {@code replica} failed, or its blocks could not be pulled ({@code why}); the request
   * is served whole.
   */
  void failed(String replica, String why, long nanos);

  /**
   * The decode replica could not pull the blocks the leg on {@code replica} prefilled ({@code
   * why}); the request is served whole there.
   */
  void pullFailed(String replica, String why);

  /** Hears nothing. */
  PrefillListener NONE =
      new PrefillListener() {
        @Override
        public void prefilled(String replica, long nanos) {}

        @Override
        public void failed(String replica, String why, long nanos) {}

        @Override
        public void pullFailed(String replica, String why) {}
      };
}
