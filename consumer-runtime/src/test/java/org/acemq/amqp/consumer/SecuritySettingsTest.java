package org.acemq.amqp.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The security settings of {@link ConnectionSettings}: defaults, values kept, and settings that contradict. */
class SecuritySettingsTest {

    static ConnectionSettings.Builder broker() {
        return ConnectionSettings.builder("broker.example", 5671);
    }

    @Test
    void defaults() {
        ConnectionSettings s = broker().trustStore("/trust.p12", "t").keyStore("/key.p12", "k").build();
        assertThat(s.trustStoreType()).isEqualTo("PKCS12").isEqualTo(ConnectionSettings.DEFAULT_STORE_TYPE);
        assertThat(s.keyStoreType()).isEqualTo("PKCS12");
        assertThat(s.keyAlias()).isNull();
        assertThat(s.enabledProtocols()).isEmpty();
        assertThat(s.enabledCipherSuites()).isEmpty();
        assertThat(s.saslMechanisms()).isEmpty();
        assertThat(s.tokenCredential()).isNull();
        assertThat(s.tokenRefreshBefore()).isEqualTo(Duration.ofMinutes(1));
        assertThat(s.verifyHost()).isTrue();
    }

    @Test
    void everySecuritySettingIsKept() {
        TokenCredential tokens = () -> AccessToken.of("t", Instant.now().plusSeconds(60));
        ConnectionSettings s = broker().trustStore("/trust.jks", "t").trustStoreType("JKS")
                .keyStore("/key.p12", "k").keyStoreType("PKCS12").keyAlias("client")
                .enabledProtocols("TLSv1.3").enabledCipherSuites("TLS_AES_128_GCM_SHA256")
                .tokenCredential("app", tokens).tokenRefreshBefore(Duration.ofSeconds(30))
                .saslMechanisms(SaslMechanism.XOAUTH2, SaslMechanism.PLAIN).build();
        assertThat(s.trustStoreType()).isEqualTo("JKS");
        assertThat(s.keyAlias()).isEqualTo("client");
        assertThat(s.enabledProtocols()).containsExactly("TLSv1.3");
        assertThat(s.enabledCipherSuites()).containsExactly("TLS_AES_128_GCM_SHA256");
        assertThat(s.user()).isEqualTo("app");
        assertThat(s.password()).isNull();
        assertThat(s.tokenCredential()).isSameAs(tokens);
        assertThat(s.tokenRefreshBefore()).isEqualTo(Duration.ofSeconds(30));
        assertThat(s.saslMechanisms()).containsExactly(SaslMechanism.PLAIN, SaslMechanism.XOAUTH2);
        assertThat(s.toString()).contains("token=<credential>").contains("sasl=[PLAIN, XOAUTH2]");
    }

    @Test
    void aMechanismWhoseCredentialsAreMissingIsRefused() {
        assertThatThrownBy(() -> broker().saslMechanisms(SaslMechanism.PLAIN).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("saslMechanisms includes PLAIN, which needs credentials(user, password) or "
                        + "tokenCredential(user, credential)");
        assertThatThrownBy(() -> broker().credentials("u", "p").saslMechanisms(SaslMechanism.EXTERNAL).build())
                .hasMessageContaining("EXTERNAL, which needs a client certificate");
        assertThatThrownBy(() -> broker().tokenCredential("u", () -> AccessToken.withoutExpiry("t"))
                .saslMechanisms(SaslMechanism.SCRAM_SHA_256).build())
                .hasMessageContaining("SCRAM-SHA-256, which cannot carry a bearer token");
        assertThat(broker().saslMechanisms(SaslMechanism.ANONYMOUS).build().saslMechanisms())
                .containsExactly(SaslMechanism.ANONYMOUS);
        assertThat(broker().credentials("u", "p").keyStore("/k.p12", "k")
                .saslMechanisms(SaslMechanism.SCRAM_SHA_512, SaslMechanism.PLAIN).build().saslMechanisms())
                .containsExactly(SaslMechanism.PLAIN, SaslMechanism.SCRAM_SHA_512);
    }

    @Test
    void contradictionsAreRefusedWithWhatToDo() {
        assertThatThrownBy(() -> broker().credentials("u", "p")
                .tokenCredential("u", () -> AccessToken.withoutExpiry("t")).build())
                .hasMessage("credentials and tokenCredential are both set: authenticate with one of them");
        assertThatThrownBy(() -> broker().keyAlias("client").build()).hasMessage("keyAlias is set, but no keyStore");
        assertThatThrownBy(() -> broker().trustStoreType("JKS").build())
                .hasMessage("trustStoreType is set, but no trustStore");
        assertThatThrownBy(() -> broker().enabledProtocols("TLSv1.3").build())
                .hasMessageStartingWith("enabledProtocols is set, but TLS is off");
    }

    @Test
    void valuesAreCheckedAsTheyArrive() {
        assertThatThrownBy(() -> broker().keyStoreType("NOPE"))
                .hasMessageStartingWith("keyStoreType must be a key store type this JVM knows")
                .hasMessageEndingWith("but was 'NOPE'");
        assertThatThrownBy(() -> broker().enabledProtocols("TLSv9"))
                .hasMessageStartingWith("enabledProtocols must each be supported by this JVM")
                .hasMessageEndingWith("but one was 'TLSv9'");
        assertThatThrownBy(() -> broker().enabledCipherSuites("NO_SUCH_SUITE"))
                .hasMessageEndingWith("but one was 'NO_SUCH_SUITE'");
        assertThatThrownBy(() -> broker().tokenRefreshBefore(Duration.ZERO))
                .hasMessage("tokenRefreshBefore must be > 0, but was PT0S");
        assertThatThrownBy(() -> broker().saslMechanisms((SaslMechanism) null))
                .isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> AccessToken.of(" ", Instant.now())).hasMessageContaining("token value");
    }
}
