package org.acemq.amqp.consumer.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.UnrecoverableKeyException;
import java.util.Collections;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManagerFactory;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.apache.qpid.protonj2.client.exceptions.ClientConnectionSecurityException;

/**
 * Reads the configured key and trust stores before each connection attempt, the way the AMQP client will (same type,
 * same password for the store and its keys), so that a missing file, a wrong password, a wrong type or a key alias
 * that is not in the store is reported once, in words, and is not retried: the client itself would log an error and
 * fail every attempt the same way.
 */
final class TlsStores {

    private TlsStores() {
    }

    /**
     * @param settings the connection settings
     * @throws ClientConnectionSecurityException if a configured store cannot be used; its message says which and why
     *     (never a password)
     */
    static void check(ConnectionSettings settings) throws ClientConnectionSecurityException {
        if (!settings.tls() || settings.sslContext() != null) {
            return;
        }
        if (settings.trustStorePath() != null) {
            KeyStore trust = load("trust store", settings.trustStorePath(), settings.trustStoreType(),
                    settings.trustStorePassword());
            try {
                if (!hasCertificate(trust)) {
                    throw new ClientConnectionSecurityException("trust store " + settings.trustStorePath()
                            + " holds no certificate: no broker could be trusted");
                }
                TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm()).init(trust);
            } catch (GeneralSecurityException e) {
                throw new ClientConnectionSecurityException("trust store " + settings.trustStorePath()
                        + " cannot be used: " + e.getMessage(), e);
            }
        }
        if (settings.keyStorePath() != null) {
            String path = settings.keyStorePath();
            KeyStore keys = load("key store", path, settings.keyStoreType(), settings.keyStorePassword());
            try {
                String alias = settings.keyAlias();
                if (alias != null && !keys.isKeyEntry(alias)) {
                    throw new ClientConnectionSecurityException("key store " + path + " has no private key entry "
                            + "named '" + alias + "' (keyAlias); its entries are " + Collections.list(keys.aliases()));
                }
                String password = settings.keyStorePassword();
                KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm())
                        .init(keys, password == null ? null : password.toCharArray());
            } catch (UnrecoverableKeyException e) {
                throw new ClientConnectionSecurityException("key store " + path + ": a private key cannot be read "
                        + "with the store's password (the client uses the store password for its keys): "
                        + e.getMessage(), e);
            } catch (GeneralSecurityException e) {
                throw new ClientConnectionSecurityException("key store " + path + " cannot be used: "
                        + e.getMessage(), e);
            }
        }
    }

    private static KeyStore load(String what, String location, String type, String password)
            throws ClientConnectionSecurityException {
        try (InputStream in = open(what, location)) {
            KeyStore store = KeyStore.getInstance(type);
            store.load(in, password == null ? null : password.toCharArray());
            return store;
        } catch (NoSuchFileException e) {
            throw new ClientConnectionSecurityException(what + " " + location + " does not exist", e);
        } catch (IOException e) {
            // the JDK reports a wrong password as an IOException caused by an UnrecoverableKeyException
            String reason = e.getCause() instanceof UnrecoverableKeyException
                    || String.valueOf(e.getMessage()).contains("password")
                    ? "the password is wrong, or the file is not a " + type + " store"
                    : e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
            throw new ClientConnectionSecurityException(what + " " + location + " (" + type + ") cannot be read: "
                    + reason, e);
        } catch (GeneralSecurityException e) {
            throw new ClientConnectionSecurityException(what + " " + location + " (" + type + ") cannot be read: "
                    + e.getMessage(), e);
        }
    }

    /** Opens a store where the AMQP client looks: {@code classpath:}, {@code file://}, {@code file:} or a path. */
    private static InputStream open(String what, String location) throws IOException,
            ClientConnectionSecurityException {
        if (location.startsWith("classpath:")) {
            InputStream in = Thread.currentThread().getContextClassLoader()
                    .getResourceAsStream(location.substring("classpath:".length()));
            if (in == null) {
                throw new ClientConnectionSecurityException(what + " " + location + " is not on the class path");
            }
            return in;
        }
        String file = location.startsWith("file://") ? location.substring("file://".length())
                : location.startsWith("file:") ? location.substring("file:".length()) : location;
        return Files.newInputStream(Path.of(file));
    }

    private static boolean hasCertificate(KeyStore store) throws GeneralSecurityException {
        for (String alias : Collections.list(store.aliases())) {
            if (store.getCertificate(alias) != null) {
                return true;
            }
        }
        return false;
    }
}
