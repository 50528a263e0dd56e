"""Optional authorization server (``oauth_cognito=true``): an Amazon Cognito user pool.

Provisions the pool (no self sign-up: an administrator creates users; MFA with an authenticator
app required), a hosted sign-in domain, a resource server ``mcp`` with the platform's scopes
(``oauth_scopes``, default ``mcp/tools``) and one public app client (authorization code grant,
no secret: MCP clients are public clients and send PKCE) whose callbacks are
``oauth_cognito_callback_urls``. The endpoint is wired to it: the pool is the issuer and, because
Cognito access tokens carry no ``aud`` claim, the token's ``client_id`` must be this app client
and the resource server's scope must be present (``MCP_OAUTH_CLIENT_IDS``, ``MCP_OAUTH_SCOPES``).

Cognito offers neither dynamic client registration (RFC 7591) nor client ID metadata documents:
MCP clients that rely on them cannot register themselves and need this client's id configured.
The OAuth facade (``oauth_facade``, on by default here; stacks/oauth_facade.py) gives them both:
it signs users in through its own confidential app client (:meth:`add_facade_client`, whose
callback is the facade's on the Function URL). ``oauth_machine_client`` adds an app client for
the client_credentials grant (a secret, the resource server's scopes only) for machine callers.

With ``oauth_tenant_claim=custom:<name>`` the pool has that custom attribute, **immutable**: an
administrator sets a user's tenant when creating the user, and nobody changes it afterwards (a
mutable one would be writable by its user through UpdateUserAttributes with their own access
token: a way into another tenant). Cognito puts it in ID tokens, which is where the facade reads
it; its access tokens carry it only when a pre-token-generation trigger adds it.
"""

from __future__ import annotations

from aws_cdk import Aws, CfnOutput, Duration, Stack
from aws_cdk import aws_cognito as cognito
from constructs import Construct

from stacks.common import deletion_protection, removal_policy
from stacks.config import PlatformConfig
from stacks.oauth_config import COGNITO_CUSTOM_PREFIX, COGNITO_RESOURCE_SERVER


class CognitoAuthorization(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, config: PlatformConfig) -> None:
        super().__init__(scope, construct_id)
        tenant = config.oauth_tenant_claim.removeprefix(COGNITO_CUSTOM_PREFIX)
        self.user_pool = cognito.UserPool(
            self,
            "UserPool",
            user_pool_name=f"mcp-platform-{config.stage}",
            self_sign_up_enabled=False,  # default deny: only users an administrator created
            sign_in_aliases=cognito.SignInAliases(email=True),
            password_policy=cognito.PasswordPolicy(
                min_length=14, require_digits=True, require_lowercase=True, require_symbols=True, require_uppercase=True
            ),
            mfa=cognito.Mfa.REQUIRED,
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),  # no SMS: no SNS role, no toll fraud
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            feature_plan=cognito.FeaturePlan.ESSENTIALS,  # managed login; Plus adds threat protection
            custom_attributes=(
                {tenant: cognito.StringAttribute(min_len=1, max_len=64, mutable=False)}
                if tenant != config.oauth_tenant_claim
                else None
            ),
            deletion_protection=deletion_protection(config),
            removal_policy=removal_policy(config),
        )
        # A Cognito prefix domain must be unique in the region: stage and account make it so.
        self.domain = self.user_pool.add_domain(
            "Domain",
            cognito_domain=cognito.CognitoDomainOptions(domain_prefix=f"mcp-{config.stage}-{Aws.ACCOUNT_ID}"),
        )
        prefix = COGNITO_RESOURCE_SERVER + "/"
        resource_scopes = [
            cognito.ResourceServerScope(
                scope_name=scope.removeprefix(prefix), scope_description=f"MCP platform {scope}"
            )
            for scope in config.oauth_scopes
        ]
        resource_server = self.user_pool.add_resource_server(
            "ResourceServer", identifier=COGNITO_RESOURCE_SERVER, scopes=resource_scopes
        )
        self.resource_server = resource_server
        self.resource_scopes = [cognito.OAuthScope.resource_server(resource_server, s) for s in resource_scopes]
        self.client = self.user_pool.add_client(
            "McpClient",
            generate_secret=False,
            auth_flows=cognito.AuthFlow(user_srp=True),
            o_auth=cognito.OAuthSettings(
                flows=cognito.OAuthFlows(authorization_code_grant=True),
                scopes=[
                    cognito.OAuthScope.OPENID,
                    *(cognito.OAuthScope.resource_server(resource_server, s) for s in resource_scopes),
                ],
                callback_urls=list(config.oauth_cognito_callback_urls),
            ),
            supported_identity_providers=[cognito.UserPoolClientIdentityProvider.COGNITO],
            prevent_user_existence_errors=True,
            access_token_validity=Duration.hours(1),
            id_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.days(30),
            enable_token_revocation=True,
        )
        self.client.node.add_dependency(resource_server)  # its scopes must exist first
        self.machine_client: cognito.UserPoolClient | None = None
        if config.oauth_machine_client:
            # Machines sign in as themselves: the client_credentials grant, a secret, no user.
            self.machine_client = self.user_pool.add_client(
                "MachineClient",
                generate_secret=True,
                o_auth=cognito.OAuthSettings(
                    flows=cognito.OAuthFlows(client_credentials=True), scopes=self.resource_scopes
                ),
                supported_identity_providers=[cognito.UserPoolClientIdentityProvider.COGNITO],
                access_token_validity=Duration.hours(1),
                enable_token_revocation=True,
            )
            self.machine_client.node.add_dependency(resource_server)
        # The tokens' iss (the ProviderURL attribute is the same without its scheme).
        self.issuer = f"https://cognito-idp.{Aws.REGION}.{Aws.URL_SUFFIX}/{self.user_pool.user_pool_id}"
        self.jwks_url = f"{self.issuer}/.well-known/jwks.json"
        stack = Stack.of(self)
        CfnOutput(stack, "OAuthIssuer", value=self.issuer, description="OAuth issuer (Cognito user pool)")
        CfnOutput(stack, "OAuthClientId", value=self.client.user_pool_client_id, description="public app client id")
        CfnOutput(stack, "OAuthSignInDomain", value=self.domain.base_url(), description="authorize/token endpoints")
        if self.machine_client is not None:
            CfnOutput(
                stack,
                "OAuthMachineClientId",
                value=self.machine_client.user_pool_client_id,
                description="client_credentials app client (its secret: aws cognito-idp describe-user-pool-client)",
            )

    def add_facade_client(self, callback_urls: list[str]) -> cognito.UserPoolClient:
        """The OAuth facade's own app client: confidential (it keeps a secret server-side), the
        authorization-code grant with ``openid`` only (the facade issues the resource's scopes
        itself), the facade's callback: on the Function URL (and on ``oauth_audience``'s origin)."""
        return self.user_pool.add_client(
            "FacadeClient",
            generate_secret=True,
            auth_flows=cognito.AuthFlow(user_srp=True),
            o_auth=cognito.OAuthSettings(
                flows=cognito.OAuthFlows(authorization_code_grant=True),
                scopes=[cognito.OAuthScope.OPENID],
                callback_urls=callback_urls,
            ),
            supported_identity_providers=[cognito.UserPoolClientIdentityProvider.COGNITO],
            prevent_user_existence_errors=True,
            access_token_validity=Duration.minutes(5),  # used once, to read the ID token
            id_token_validity=Duration.minutes(5),
            refresh_token_validity=Duration.hours(1),  # the minimum; never stored by the facade
            enable_token_revocation=True,
        )
