package org.acemq.amqp.testinfra.tls;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Certificates for TLS tests, made when first asked for with the JDK's own {@code keytool} (no library): two
 * certificate authorities (the one the tests trust, and another one), a broker certificate for {@code 127.0.0.1} and
 * {@code localhost}, a broker certificate for another host name only, and a client certificate, each signed by the
 * trusted authority, in PKCS12 key stores; trust stores with either authority (PKCS12, and JKS for the trusted one);
 * and PEM files of the trusted authority and the broker's certificate and key, for brokers configured with PEM files
 * (RabbitMQ). Everything lives in a temporary directory deleted when the JVM exits; every store has the password
 * {@link #password()}, made at random for this run.
 *
 * <p><b>Threading:</b> {@link #shared()} is thread-safe; the first caller makes the files.
 */
public final class TestPki {

    private static volatile TestPki shared;

    private final Path dir;
    private final String password = "pki-" + UUID.randomUUID();

    private TestPki(Path dir) {
        this.dir = dir;
    }

    /**
     * @return the JVM's certificates, made on the first call (a few seconds: about a dozen {@code keytool} runs)
     * @throws IllegalStateException if {@code keytool} fails
     */
    public static TestPki shared() {
        TestPki p = shared;
        if (p == null) {
            synchronized (TestPki.class) {
                p = shared;
                if (p == null) {
                    p = make();
                    shared = p;
                }
            }
        }
        return p;
    }

    /** @return the password of every store and key */
    public String password() {
        return password;
    }

    /** @return the directory of the files */
    public Path directory() {
        return dir;
    }

    /** @return a PKCS12 trust store with the authority that signed the broker's and the client's certificates */
    public Path trustStore() {
        return dir.resolve("trust.p12");
    }

    /** @return the same trust store as {@link #trustStore()}, as a JKS file */
    public Path trustStoreJks() {
        return dir.resolve("trust.jks");
    }

    /** @return a PKCS12 trust store with another authority only: it trusts none of the certificates here */
    public Path otherTrustStore() {
        return dir.resolve("other-trust.p12");
    }

    /** @return the broker's PKCS12 key store: a certificate for {@code 127.0.0.1} and {@code localhost} (alias broker) */
    public Path brokerKeyStore() {
        return dir.resolve("broker.p12");
    }

    /** @return a PKCS12 key store with a broker certificate for {@code broker.invalid} only (alias broker) */
    public Path wrongHostKeyStore() {
        return dir.resolve("wrong-host.p12");
    }

    /** @return the client's PKCS12 key store (alias client; signed by the trusted authority) */
    public Path clientKeyStore() {
        return dir.resolve("client.p12");
    }

    /** @return the trusted authority's certificate, PEM */
    public Path caPem() {
        return dir.resolve("ca.pem");
    }

    /** @return the broker's certificate ({@link #brokerKeyStore()}'s), PEM */
    public Path brokerCertificatePem() {
        return dir.resolve("broker.pem");
    }

    /** @return the broker's private key, unencrypted PKCS#8 PEM */
    public Path brokerKeyPem() {
        return dir.resolve("broker.key");
    }

    // ------------------------------------------------------------------------------------------------

    private static TestPki make() {
        try {
            Path dir = Files.createTempDirectory("acemq-pki-");
            TestPki pki = new TestPki(dir);
            Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteQuietly(dir), "acemq-pki-cleanup"));
            pki.generate();
            return pki;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make test certificates", e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot make test certificates", e);
        }
    }

    private void generate() throws IOException, GeneralSecurityException {
        authority("ca", "CN=AceMQ Test CA");
        authority("other-ca", "CN=AceMQ Other Test CA");
        Certificate ca = certificate(dir.resolve("ca.pem"));
        Certificate otherCa = certificate(dir.resolve("other-ca.pem"));
        trustStore(trustStore(), "PKCS12", ca);
        trustStore(trustStoreJks(), "JKS", ca);
        trustStore(otherTrustStore(), "PKCS12", otherCa);
        leaf("broker", "CN=localhost", "san=ip:127.0.0.1,dns:localhost", "eku=serverAuth", brokerKeyStore(), ca);
        leaf("wrong-host", "CN=broker.invalid", "san=dns:broker.invalid", "eku=serverAuth", wrongHostKeyStore(), ca);
        leaf("client", "CN=acemq-test-client", null, "eku=clientAuth", clientKeyStore(), ca);
        Files.copy(dir.resolve("broker.crt.pem"), brokerCertificatePem());
        KeyStore broker = load(brokerKeyStore());
        Key key = broker.getKey("broker", password.toCharArray());
        Files.writeString(brokerKeyPem(), pem("PRIVATE KEY", ((PrivateKey) key).getEncoded()));
    }

    /** A self-signed authority in {@code <name>.p12}, and its certificate in {@code <name>.pem}. */
    private void authority(String name, String dn) {
        keytool("-genkeypair", "-alias", name, "-keyalg", "RSA", "-keysize", "2048", "-dname", dn, "-ext", "bc:c",
                "-validity", "3", "-keystore", dir.resolve(name + ".p12").toString(), "-storetype", "PKCS12");
        keytool("-exportcert", "-rfc", "-alias", name, "-keystore", dir.resolve(name + ".p12").toString(), "-file",
                dir.resolve(name + ".pem").toString());
    }

    /** A key pair signed by the trusted authority, in a PKCS12 store of its own with the chain (alias {@code alias}). */
    private void leaf(String alias, String dn, String san, String eku, Path store, Certificate ca)
            throws IOException, GeneralSecurityException {
        Path work = dir.resolve(alias + ".work.p12");
        keytool("-genkeypair", "-alias", alias, "-keyalg", "RSA", "-keysize", "2048", "-dname", dn, "-validity", "3",
                "-keystore", work.toString(), "-storetype", "PKCS12");
        Path csr = dir.resolve(alias + ".csr");
        keytool("-certreq", "-alias", alias, "-keystore", work.toString(), "-file", csr.toString());
        List<String> sign = new ArrayList<>(List.of("-gencert", "-rfc", "-alias", "ca", "-keystore",
                dir.resolve("ca.p12").toString(), "-infile", csr.toString(), "-outfile",
                dir.resolve(alias + ".crt.pem").toString(), "-validity", "3", "-ext", eku));
        if (san != null) {
            sign.add("-ext");
            sign.add(san);
        }
        keytool(sign.toArray(new String[0]));
        KeyStore pending = load(work);
        Key key = pending.getKey(alias, password.toCharArray());
        KeyStore out = KeyStore.getInstance("PKCS12");
        out.load(null, null);
        out.setKeyEntry(alias, key, password.toCharArray(),
                new Certificate[] {certificate(dir.resolve(alias + ".crt.pem")), ca});
        save(out, store);
    }

    private void trustStore(Path path, String type, Certificate ca) throws IOException, GeneralSecurityException {
        KeyStore trust = KeyStore.getInstance(type);
        trust.load(null, null);
        trust.setCertificateEntry("ca", ca);
        save(trust, path);
    }

    private KeyStore load(Path path) throws IOException, GeneralSecurityException {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(path)) {
            ks.load(in, password.toCharArray());
        }
        return ks;
    }

    private void save(KeyStore ks, Path path) throws IOException, GeneralSecurityException {
        try (OutputStream out = Files.newOutputStream(path)) {
            ks.store(out, password.toCharArray());
        }
    }

    private static Certificate certificate(Path pem) throws IOException, GeneralSecurityException {
        return CertificateFactory.getInstance("X.509")
                .generateCertificate(new ByteArrayInputStream(Files.readAllBytes(pem)));
    }

    private static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n"
                + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }

    private void keytool(String... args) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        command.addAll(List.of(args));
        command.addAll(List.of("-storepass", password, "-keypass", password, "-noprompt"));
        try {
            Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IllegalStateException("keytool " + args[0] + " failed: " + output);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run keytool", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running keytool", e);
        }
    }

    private static void deleteQuietly(Path dir) {
        try (var walk = Files.walk(dir)) {
            walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException ignored) {
            // best effort
        }
    }
}
