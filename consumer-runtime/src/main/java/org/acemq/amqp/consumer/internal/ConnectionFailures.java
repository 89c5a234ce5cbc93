package org.acemq.amqp.consumer.internal;

import java.io.FileNotFoundException;
import java.nio.file.NoSuchFileException;
import java.security.KeyStoreException;
import java.security.UnrecoverableKeyException;
import java.security.cert.CertPathBuilderException;
import java.security.cert.CertPathValidatorException;
import java.security.cert.CertificateException;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateNotYetValidException;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLPeerUnverifiedException;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.apache.qpid.protonj2.client.exceptions.ClientConnectionSecurityException;
import org.apache.qpid.protonj2.client.exceptions.ClientConnectionSecuritySaslException;

/**
 * Tells a connection failure that retrying cannot fix from one it can, by its causes rather than by the AMQP client's
 * exception class (the client reports most certificate problems as a remotely closed connection), and says why in
 * words: a broker certificate the trust store does not trust or that names another host, a client certificate the
 * broker refuses or that is missing, TLS settings the broker does not share, a TLS client on a port that does not speak
 * TLS, a key or trust store that cannot be read, credentials the broker refuses. Anything else (connection refused,
 * reset, a broker that is down or closes the socket, also in the middle of a TLS handshake) is transient.
 */
final class ConnectionFailures {

    /** TLS alerts a broker sends for a client certificate, or for TLS settings, it will not accept. */
    private static final Set<String> REFUSING_ALERTS = Set.of("bad_certificate", "certificate_required",
            "certificate_unknown", "certificate_expired", "certificate_revoked", "unsupported_certificate",
            "unknown_ca", "access_denied", "handshake_failure", "protocol_version", "insufficient_security",
            "illegal_parameter", "no_application_protocol", "decrypt_error");
    private static final String ALERT = "Received fatal alert: ";

    private ConnectionFailures() {
    }

    /**
     * @param failure a failed connection attempt
     * @param settings the connection's settings (to recognise its own store files in a file-not-found)
     * @return why retrying cannot help, in words and without a secret; null if the failure may be transient
     */
    static String permanent(Throwable failure, ConnectionSettings settings) {
        Map<Throwable, Boolean> seen = new IdentityHashMap<>();
        List<Throwable> chain = new ArrayList<>();
        for (Throwable t = failure; t != null && seen.put(t, Boolean.TRUE) == null; t = t.getCause()) {
            chain.add(t);
        }
        // the most specific cause says most: a certificate path problem under the JDK's validator exception
        for (Throwable t : chain) {
            if (t instanceof CertPathBuilderException || t instanceof CertPathValidatorException) {
                return "TLS: the broker's certificate is not trusted (" + text(t) + "); the trust store must hold "
                        + "the certificate authority that signed it";
            }
        }
        for (Throwable t : chain) {
            String reason = reason(t, settings);
            if (reason != null) {
                return reason;
            }
        }
        for (Throwable t : chain) {
            if (t instanceof SSLException) {
                String reason = tlsReason((SSLException) t);
                if (reason != null) {
                    return reason;
                }
            }
        }
        return null;
    }

    /** @return why the failure is permanent, or its description if it is transient */
    static String describe(Throwable failure, ConnectionSettings settings) {
        String reason = permanent(failure, settings);
        return reason != null ? reason : Errors.describe(failure);
    }

    private static String reason(Throwable t, ConnectionSettings settings) {
        if (t instanceof ClientConnectionSecuritySaslException sasl) {
            return sasl.isSysTempFailure() ? null : "authentication refused by the broker: " + text(t);
        }
        if (t instanceof ClientConnectionSecurityException) {
            return "security: " + text(t); // also the key and trust store checks (TlsStores)
        }
        if (t instanceof CertificateExpiredException || t instanceof CertificateNotYetValidException) {
            return "TLS: the broker's certificate is not valid now: " + text(t);
        }
        if (t instanceof CertificateException && (text(t).contains("subject alternative")
                || text(t).startsWith("No name matching"))) {
            return "TLS: the broker's certificate does not name the host " + settings.host() + " ("
                    + text(t) + "); connect by a name the certificate carries, or turn verifyHost off";
        }
        if (t instanceof CertificateException || t instanceof SSLPeerUnverifiedException) {
            return "TLS: the broker's certificate was refused: " + text(t);
        }
        if (t instanceof UnrecoverableKeyException || t instanceof KeyStoreException) {
            return "TLS: a key or trust store cannot be used: " + text(t);
        }
        if ((t instanceof FileNotFoundException || t instanceof NoSuchFileException) && ownStore(t, settings)) {
            return "TLS: a key or trust store does not exist: " + text(t);
        }
        if (t.getClass().getName().equals("io.netty.handler.ssl.NotSslRecordException")) {
            return "TLS: the broker's port does not speak TLS (it answered in plain text); use its TLS port, or turn "
                    + "TLS off for a plain one";
        }
        return null;
    }

    /** @return why a TLS exception is permanent, or null: a handshake cut off by a closed connection is transient */
    private static String tlsReason(SSLException e) {
        String message = text(e);
        int at = message.indexOf(ALERT);
        if (at >= 0) {
            String alert = message.substring(at + ALERT.length()).trim().toLowerCase(Locale.ROOT);
            if (REFUSING_ALERTS.contains(alert)) {
                return "TLS: the broker refused the handshake (" + message.substring(at) + ")"
                        + (alert.startsWith("certificate") || alert.equals("bad_certificate")
                        || alert.equals("unknown_ca") || alert.equals("access_denied")
                        ? ": it wants a client certificate it trusts (keyStore)" : "");
            }
            return null;
        }
        if (message.startsWith("Unsupported or unrecognized SSL message")) {
            return "TLS: the broker's port does not speak TLS (" + message + ")";
        }
        if (e instanceof SSLHandshakeException && (message.startsWith("No appropriate protocol")
                || message.contains("no cipher suites in common") || message.startsWith("No available authentication")
                || message.contains("protocol_version"))) {
            return "TLS: the consumer's TLS settings and the broker's have nothing in common (" + message
                    + "); check enabledProtocols and enabledCipherSuites";
        }
        return null;
    }

    private static boolean ownStore(Throwable t, ConnectionSettings settings) {
        String message = text(t);
        return settings.tls() && (contains(message, settings.trustStorePath())
                || contains(message, settings.keyStorePath()));
    }

    private static boolean contains(String message, String location) {
        if (location == null) {
            return false;
        }
        String file = location.startsWith("file://") ? location.substring(7)
                : location.startsWith("file:") ? location.substring(5) : location;
        return message.contains(file);
    }

    private static String text(Throwable t) {
        return t.getMessage() == null ? t.getClass().getSimpleName() : LogSafe.text(t.getMessage());
    }
}
