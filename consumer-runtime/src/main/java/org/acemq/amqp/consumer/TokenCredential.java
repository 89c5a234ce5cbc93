package org.acemq.amqp.consumer;

/**
 * Where the consumer gets OAuth 2 bearer tokens (or any token with an expiry) to authenticate with
 * ({@link ConnectionSettings.Builder#tokenCredential}): typically a client-credentials call to the identity provider,
 * or a token file a sidecar keeps fresh.
 *
 * <p><b>When it is called.</b> For every connection the consumer opens: the first one, every reconnect (the consumer
 * reconnects by itself when a token credential is set, so that no connection is opened with a token from before), and
 * the renewal of the connection before the token in use expires ({@link ConnectionSettings#tokenRefreshBefore()}).
 * It is called on the consumer's control thread and may block (a network call) for up to the open timeout's order of
 * magnitude; it is never called concurrently for one consumer. Caching inside is allowed, but a cached token must not
 * be handed out when it expires within {@link ConnectionSettings#tokenRefreshBefore()}.
 *
 * <p><b>Failures.</b> An exception counts as a failed connection attempt and is retried with the connection's back-off
 * (an identity provider that is down is not a reason to give up); its message, never a token, goes to the log and to
 * {@link ConsumerHealth#lastError()}, so it must not carry a secret either.
 */
@FunctionalInterface
public interface TokenCredential {

    /**
     * @return a token that is valid now
     * @throws Exception if none can be had now
     */
    AccessToken token() throws Exception;
}
