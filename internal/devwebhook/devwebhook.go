// Package devwebhook serves Lockstep's admission webhooks from a process on the
// developer's host: it makes a throw-away CA and serving certificate and points
// the apiserver's webhook configurations at the host. In a cluster the
// certificate rotator does this job instead.
package devwebhook

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lockstep-dev/lockstep/config"
)

// ConfigName is the name of both webhook configurations in dev mode.
const ConfigName = "lockstep-dev"

const caFile = "ca.crt"

// WriteServingCert writes ca.crt, tls.crt and tls.key into dir, for a server
// reached at host (an IP address or a DNS name). Existing files are replaced.
func WriteServingCert(dir, host string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "lockstep-dev-ca", Organization: []string{"lockstep"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("signing CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("signing serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	files := map[string][]byte{
		caFile:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// Configurations returns the webhook configurations of manifests (the output
// of make generate), renamed to name and pointed at baseURL with caBundle. A
// kind with no webhooks in manifests is left out.
func Configurations(manifests []byte, name, baseURL string, caBundle []byte) ([]client.Object, error) {
	var m admissionv1.MutatingWebhookConfiguration
	var v admissionv1.ValidatingWebhookConfiguration
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for i := 0; ; i++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			break
		}
		var target any
		switch obj["kind"] {
		case "MutatingWebhookConfiguration":
			target = &m
		case "ValidatingWebhookConfiguration":
			target = &v
		default:
			continue
		}
		if err := remarshal(obj, target); err != nil {
			return nil, fmt.Errorf("decoding webhook manifest %d: %w", i, err)
		}
	}
	point := func(c *admissionv1.WebhookClientConfig) {
		url := baseURL + *c.Service.Path
		c.Service = nil
		c.URL = &url
		c.CABundle = caBundle
	}
	var out []client.Object
	if len(m.Webhooks) > 0 {
		m.Name = name
		for i := range m.Webhooks {
			point(&m.Webhooks[i].ClientConfig)
		}
		out = append(out, &m)
	}
	if len(v.Webhooks) > 0 {
		v.Name = name
		for i := range v.Webhooks {
			point(&v.Webhooks[i].ClientConfig)
		}
		out = append(out, &v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the webhook manifests have no webhooks: run make generate")
	}
	return out, nil
}

// Registrar creates or updates the dev webhook configurations when the manager
// starts, once the webhook server is ready to answer.
type Registrar struct {
	Client  client.Reader
	Writer  client.Writer
	CertDir string
	URL     string
	// Manifests are the generated webhook configurations to register;
	// config.WebhookManifests (the operator's) when nil.
	Manifests []byte
	// Name of the registered configurations; ConfigName when empty.
	Name string
}

// NeedLeaderElection is false: every dev process serves its own webhooks.
func (Registrar) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (r Registrar) Start(ctx context.Context) error {
	ca, err := os.ReadFile(filepath.Join(r.CertDir, caFile))
	if err != nil {
		return fmt.Errorf("reading dev CA: %w", err)
	}
	manifests, name := r.Manifests, r.Name
	if manifests == nil {
		manifests = config.WebhookManifests
	}
	if name == "" {
		name = ConfigName
	}
	objs, err := Configurations(manifests, name, r.URL, ca)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if err := r.apply(ctx, obj); err != nil {
			return err
		}
	}
	<-ctx.Done()
	// Leave no configuration behind that points at a process that is gone: with
	// failurePolicy Fail it would block every write of the kinds it covers.
	cleanup, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, obj := range objs {
		if err := r.Writer.Delete(cleanup, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing webhook configuration %s: %w", obj.GetName(), err)
		}
	}
	return nil
}

func (r Registrar) apply(ctx context.Context, obj client.Object) error {
	existing := obj.DeepCopyObject().(client.Object)
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), existing)
	switch {
	case apierrors.IsNotFound(err):
		err = r.Writer.Create(ctx, obj)
	case err == nil:
		obj.SetResourceVersion(existing.GetResourceVersion())
		err = r.Writer.Update(ctx, obj)
	}
	if err != nil {
		return fmt.Errorf("registering webhook configuration %s: %w", obj.GetName(), err)
	}
	return nil
}

func remarshal(in map[string]any, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}
