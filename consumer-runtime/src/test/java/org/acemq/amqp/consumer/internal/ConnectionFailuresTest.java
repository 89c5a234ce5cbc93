package org.acemq.amqp.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.SocketException;
import java.security.UnrecoverableKeyException;
import java.security.cert.CertPathBuilderException;
import java.security.cert.CertificateException;
import java.security.cert.CertificateExpiredException;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;
import org.acemq.amqp.consumer.ConnectionSettings;
import org.apache.qpid.protonj2.client.exceptions.ClientConnectionRemotelyClosedException;
import org.apache.qpid.protonj2.client.exceptions.ClientConnectionSecuritySaslException;
import org.apache.qpid.protonj2.client.exceptions.ClientException;
import org.junit.jupiter.api.Test;

/**
 * Which connection failures are permanent, by their causes, wrapped the way the AMQP client wraps them (a remotely
 * closed connection whose cause is the TLS failure), and which stay transient.
 */
class ConnectionFailuresTest {

    static final ConnectionSettings TLS = ConnectionSettings.builder("127.0.0.1", 5671)
            .trustStore("/etc/amqp/trust.p12", "t").build();

    /** @return the failure as protonj2 reports it: a remotely closed connection caused by {@code cause} */
    static Throwable wrapped(Throwable cause) {
        return new ClientConnectionRemotelyClosedException("Remote closed connection unexpectedly", cause);
    }

    static String permanent(Throwable cause) {
        return ConnectionFailures.permanent(wrapped(cause), TLS);
    }

    @Test
    void certificateProblemsArePermanentWithTheirReason() {
        CertificateException validator = new CertificateException("PKIX path building failed",
                new CertPathBuilderException("unable to find valid certification path to requested target"));
        assertThat(permanent(new SSLHandshakeException("PKIX path building failed").initCause(validator)))
                .startsWith("TLS: the broker's certificate is not trusted (unable to find valid certification path");
        assertThat(permanent(new SSLHandshakeException("x").initCause(
                new CertificateException("No subject alternative names matching IP address 127.0.0.1 found"))))
                .startsWith("TLS: the broker's certificate does not name the host 127.0.0.1");
        assertThat(permanent(new CertificateExpiredException("NotAfter: ...")))
                .startsWith("TLS: the broker's certificate is not valid now");
    }

    @Test
    void aBrokerRefusingTheHandshakeIsPermanent() {
        assertThat(permanent(new SSLHandshakeException("Received fatal alert: bad_certificate")))
                .contains("refused the handshake (Received fatal alert: bad_certificate)").contains("keyStore");
        assertThat(permanent(new SSLException("Received fatal alert: certificate_required"))).isNotNull();
        assertThat(permanent(new SSLHandshakeException("Received fatal alert: protocol_version"))).isNotNull();
        assertThat(permanent(new SSLHandshakeException("No appropriate protocol (protocol is disabled or cipher "
                + "suites are inappropriate)"))).contains("enabledProtocols");
    }

    @Test
    void storesAndCredentialsArePermanent() {
        assertThat(permanent(new IOException("keystore password was incorrect",
                new UnrecoverableKeyException("failed to decrypt safe contents entry"))))
                .startsWith("TLS: a key or trust store cannot be used");
        assertThat(permanent(new FileNotFoundException("/etc/amqp/trust.p12 (No such file or directory)")))
                .startsWith("TLS: a key or trust store does not exist");
        assertThat(ConnectionFailures.permanent(new ClientConnectionSecuritySaslException(
                "Client failed to authenticate using SASL: PLAIN", false), TLS))
                .startsWith("authentication refused by the broker");
    }

    @Test
    void networkFailuresStayTransient() {
        assertThat(permanent(new ConnectException("Connection refused"))).isNull();
        assertThat(permanent(new SocketException("Connection reset"))).isNull();
        assertThat(permanent(new SSLHandshakeException("Connection closed while SSL/TLS handshake was in progress")))
                .as("a broker or proxy that closes the socket mid-handshake").isNull();
        assertThat(permanent(new SSLException("handshake timed out after 10000ms"))).isNull();
        assertThat(permanent(new SSLHandshakeException("Received fatal alert: internal_error"))).isNull();
        assertThat(permanent(new FileNotFoundException("/tmp/other-file (No such file or directory)")))
                .as("a missing file that is not one of the stores").isNull();
        assertThat(ConnectionFailures.permanent(new ClientConnectionSecuritySaslException("sys-temp", true), TLS))
                .as("SASL sys-temp").isNull();
        assertThat(ConnectionFailures.permanent(new ClientException("the token credential failed"), TLS)).isNull();
    }

    @Test
    void describeSaysTheReasonOrTheException() {
        assertThat(ConnectionFailures.describe(wrapped(new ConnectException("Connection refused")), TLS))
                .isEqualTo("ClientConnectionRemotelyClosedException: Remote closed connection unexpectedly");
        assertThat(ConnectionFailures.describe(wrapped(new SSLHandshakeException(
                "Received fatal alert: unknown_ca")), TLS)).startsWith("TLS: the broker refused the handshake");
    }
}
