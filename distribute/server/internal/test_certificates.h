// For tests: TLS certificates and keys, written to files for TlsOptions.
// Two self-signed P-256 certificates for "localhost" and 127.0.0.1, valid
// from 2000 to 2100, usable by servers and clients, each its own CA: the
// cluster's, and an outsider's that the cluster's CA did not sign. Made for
// the tests only:
//   openssl ca -selfsign -startdate 20000101000000Z -enddate 21000101000000Z
//   (basicConstraints CA:TRUE, SAN DNS:localhost,IP:127.0.0.1; the
//   outsider's subject is CN=untrusted test peer)
//
// Example:
//   TestTlsFiles files = WriteTestTlsFiles();
//   ServerOptions options;
//   options.tls = files.Mutual();  // cert, key, and itself as the CA
#ifndef DISTRIBUTE_SERVER_INTERNAL_TEST_CERTIFICATES_H_
#define DISTRIBUTE_SERVER_INTERNAL_TEST_CERTIFICATES_H_

#include <string>

#include "distribute/server/channel.h"

namespace distribute {
namespace server_internal {

struct TestTlsFiles {
  // The cluster's certificate (also its CA) and key.
  std::string cert;
  std::string key;
  // The outsider's self-signed certificate and key.
  std::string untrusted_cert;
  std::string untrusted_key;

  // Mutual TLS with the cluster's certificate: cert, key and CA.
  TlsOptions Mutual() const;
  // The outsider's certificate and key, trusting the cluster's CA.
  TlsOptions Outsider() const;
};

// Writes the files into $TEST_TMPDIR (else /tmp) and names them.
TestTlsFiles WriteTestTlsFiles();

}  // namespace server_internal
}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_INTERNAL_TEST_CERTIFICATES_H_
