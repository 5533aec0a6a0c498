"""MindRoom's catalogue names for agno toolkits: which agno class each is, what it needs, and which extra brings it.

One row per tool: the catalogue name, `module:Class` below `agno.tools`, the category, the project's
installable extra that brings its packages (empty: none, the packages alone), the Python modules it imports
(`import_name:pip_name`), its credentials (`kwarg=ENV_VAR`, `?` marks one the toolkit works without), the
constructor arguments the daemon sets to the agent's workspace, and how it reaches files (`agent`: only the
workspace; `unconfined`: any path the model names; empty: none). A cell `@name` stands for `SHARED[name]`'s
value for that column (the Google toolkits share their packages and their account). Nothing here imports
agno or a toolkit's packages: `mindroom.ai.toolkit_specs` does, once an agent that uses the tool is built.

MindRoom's catalogue names that are not agno toolkits here are in `tool_names.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "AGNO_TOOLKITS",
    "CONNECTIONS",
    "EXTRAS",
    "SHARED",
    "AgnoToolkit",
    "Credential",
    "Package",
    "ToolkitConnection",
]


@dataclass(frozen=True, slots=True)
class Credential:
    """A secret constructor argument read from an environment variable (or `<VAR>_FILE`), never from config."""

    kwarg: str
    env: str
    required: bool = True


@dataclass(frozen=True, slots=True)
class Package:
    """A Python module a toolkit imports, and the distribution on the package index that provides it."""

    module: str
    pip: str


@dataclass(frozen=True, slots=True)
class ToolkitConnection:
    """A toolkit that acts with the requesting person's OAuth connection: the provider id, the constructor
    argument the token goes in (`form`: the token itself, or `google` Credentials built from it), and the
    operator's credential that, when set, is used instead for everyone."""

    provider: str
    kwarg: str
    operator: str
    form: str = "token"


@dataclass(frozen=True, slots=True)
class AgnoToolkit:
    """One catalogue tool that is an agno toolkit."""

    name: str
    module: str
    class_name: str
    category: str
    extra: str | None = None
    packages: tuple[Package, ...] = ()
    credentials: tuple[Credential, ...] = ()
    workspace_args: tuple[str, ...] = ()
    file_access: str = "none"
    connection: ToolkitConnection | None = None

    @property
    def target(self) -> str:
        """`agno.tools.<module>:<Class>`."""
        return f"agno.tools.{self.module}:{self.class_name}"


SHARED: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "google": {
            # The operator's service account, when set; else each person's connection (CONNECTIONS).
            "packages": "googleapiclient:google-api-python-client,google_auth_httplib2:google-auth-httplib2,"
            "google_auth_oauthlib:google-auth-oauthlib",
            "credentials": "service_account_path=GOOGLE_SERVICE_ACCOUNT_FILE,delegated_user=GOOGLE_DELEGATED_USER?,"
            "credentials_path=GOOGLE_CREDENTIALS_FILE?,token_path=GOOGLE_TOKEN_FILE?",
        }
    }
)
"""Cells several rows share, by name and column (`@google` in a row's packages or credentials column)."""


def _items(cell: str, column: str) -> list[str]:
    if cell.startswith("@"):
        cell = SHARED[cell[1:]][column]
    return [item for item in cell.split(",") if item]


CONNECTIONS: Mapping[str, ToolkitConnection] = MappingProxyType(
    {
        "github": ToolkitConnection("github", "access_token", "access_token"),
        "spotify": ToolkitConnection("spotify", "access_token", "access_token"),
        **{
            name: ToolkitConnection(provider, "creds", "service_account_path", "google")
            for name, provider in (
                ("gmail", "google_gmail"),
                ("google_calendar", "google_calendar"),
                ("google_drive", "google_drive"),
                ("google_sheets", "google_sheets"),
            )
        },
    }
)
"""The toolkits that take a person's OAuth connection, by catalogue name, with MindRoom's provider ids."""


def _row(line: str) -> AgnoToolkit:
    name, target, category, extra, packages, creds, workspace, files = (cell.strip() for cell in line.split("|"))
    module, _, class_name = target.partition(":")
    return AgnoToolkit(
        name=name,
        module=module,
        class_name=class_name,
        category=category,
        extra=extra or None,
        packages=tuple(Package(*(item.split(":") * 2)[:2]) for item in _items(packages, "packages")),
        credentials=tuple(
            Credential(kwarg, env.rstrip("?"), required=not env.endswith("?"))
            for kwarg, _, env in (item.partition("=") for item in _items(creds, "credentials"))
        ),
        workspace_args=tuple(_items(workspace, "workspace")),
        file_access=files or "none",
        connection=CONNECTIONS.get(name),
    )


# name | agno.tools module:Class | category | extra | import:pip packages | kwarg=ENV credentials | workspace args | files
_TABLE = """
duckduckgo             | duckduckgo:DuckDuckGoTools                | research      | tools-web          | ddgs                                      |                                                                                                                   |                  |
googlesearch           | websearch:WebSearchTools                  | research      | tools-web          | ddgs                                      |                                                                                                                   |                  |
wikipedia              | wikipedia:WikipediaTools                  | research      | tools-web          | wikipedia                                 |                                                                                                                   |                  |
arxiv                  | arxiv:ArxivTools                          | research      | tools-web          | arxiv,pypdf                               |                                                                                                                   |                  |
newspaper              | newspaper4k:Newspaper4kTools              | research      | tools-web          | newspaper:newspaper4k                     |                                                                                                                   |                  |
trafilatura            | trafilatura:TrafilaturaTools              | research      |                    | trafilatura                               |                                                                                                                   |                  |
hackernews             | hackernews:HackerNewsTools                | research      |                    |                                           |                                                                                                                   |                  |
pubmed                 | pubmed:PubmedTools                        | research      |                    |                                           |                                                                                                                   |                  |
searxng                | searxng:Searxng                           | research      |                    |                                           |                                                                                                                   |                  |
baidusearch            | baidusearch:BaiduSearchTools              | research      |                    | baidusearch,pycountry                     |                                                                                                                   |                  |
crawl4ai               | crawl4ai:Crawl4aiTools                    | research      |                    | crawl4ai                                  |                                                                                                                   |                  |
spider                 | spider:SpiderTools                        | research      |                    | spider:spider-client                      |                                                                                                                   |                  |
tavily                 | tavily:TavilyTools                        | research      | tools-search       | tavily:tavily-python                      | api_key=TAVILY_API_KEY,api_base_url=TAVILY_API_BASE_URL?                                                          |                  |
exa                    | exa:ExaTools                              | research      | tools-search       | exa_py                                    | api_key=EXA_API_KEY                                                                                               |                  |
firecrawl              | firecrawl:FirecrawlTools                  | research      | tools-search       | firecrawl:firecrawl-py                    | api_key=FIRECRAWL_API_KEY                                                                                         |                  |
linkup                 | linkup:LinkupTools                        | research      | tools-search       | linkup:linkup-sdk                         | api_key=LINKUP_API_KEY                                                                                            |                  |
serpapi                | serpapi:SerpApiTools                      | research      | tools-search       | serpapi:google-search-results             | api_key=SERP_API_KEY                                                                                              |                  |
serper                 | serper:SerperTools                        | research      |                    |                                           | api_key=SERPER_API_KEY                                                                                            |                  |
jina                   | jina:JinaReaderTools                      | research      |                    |                                           | api_key=JINA_API_KEY?                                                                                             |                  |
brightdata             | brightdata:BrightDataTools                | research      |                    |                                           | api_key=BRIGHT_DATA_API_KEY                                                                                       |                  |
scrapegraph            | scrapegraph:ScrapeGraphTools              | research      |                    | scrapegraph_py:scrapegraph-py             | api_key=SGAI_API_KEY                                                                                              |                  |
oxylabs                | oxylabs:OxylabsTools                      | research      |                    | oxylabs                                   | username=OXYLABS_USERNAME,password=OXYLABS_PASSWORD                                                               |                  |
brandfetch             | brandfetch:BrandfetchTools                | research      |                    |                                           | api_key=BRANDFETCH_API_KEY,client_id=BRANDFETCH_CLIENT_ID?                                                        |                  |
unsplash               | unsplash:UnsplashTools                    | research      |                    |                                           | access_key=UNSPLASH_ACCESS_KEY                                                                                    |                  |
agentql                | agentql:AgentQLTools                      | research      |                    | agentql,playwright                        | api_key=AGENTQL_API_KEY                                                                                           |                  |
browserbase            | browserbase:BrowserbaseTools              | research      |                    | browserbase,playwright                    | api_key=BROWSERBASE_API_KEY,project_id=BROWSERBASE_PROJECT_ID                                                     |                  |
reasoning              | reasoning:ReasoningTools                  | productivity  |                    |                                           |                                                                                                                   |                  |
sleep                  | sleep:SleepTools                          | development   |                    |                                           |                                                                                                                   |                  |
file_generation        | file_generation:FileGenerationTools       | development   |                    |                                           |                                                                                                                   | output_directory | agent
visualization          | visualization:VisualizationTools          | development   | tools-files        | matplotlib                                |                                                                                                                   | output_dir       | agent
moviepy_video_tools    | moviepy_video:MoviePyVideoTools           | development   |                    | moviepy                                   |                                                                                                                   |                  |
csv                    | csv_toolkit:CsvTools                      | productivity  | tools-data         | duckdb                                    |                                                                                                                   |                  | unconfined
duckdb                 | duckdb:DuckDbTools                        | productivity  | tools-data         | duckdb                                    |                                                                                                                   |                  | unconfined
pandas                 | pandas:PandasTools                        | productivity  | tools-data         | pandas                                    |                                                                                                                   |                  | unconfined
yfinance               | yfinance:YFinanceTools                    | productivity  | tools-data         | yfinance                                  |                                                                                                                   |                  |
sql                    | sql:SQLTools                              | productivity  |                    |                                           | db_url=SQL_TOOL_DB_URL?                                                                                           |                  |
postgres               | postgres:PostgresTools                    | productivity  | postgres           | psycopg:psycopg[binary]                   | password=POSTGRES_TOOL_PASSWORD?                                                                                  |                  |
redshift               | redshift:RedshiftTools                    | development   |                    | redshift_connector:redshift-connector     | password=REDSHIFT_PASSWORD?,secret_access_key=AWS_SECRET_ACCESS_KEY?,session_token=AWS_SESSION_TOKEN?              |                  |
google_bigquery        | google.bigquery:GoogleBigQueryTools       | development   | tools-google       | google.cloud.bigquery:google-cloud-bigquery |                                                                                                               |                  |
financial_datasets_api | financial_datasets:FinancialDatasetsTools | productivity  |                    |                                           | api_key=FINANCIAL_DATASETS_API_KEY                                                                                |                  |
openbb                 | openbb:OpenBBTools                        | productivity  |                    | openbb                                    | openbb_pat=OPENBB_PAT?                                                                                            |                  |
notion                 | notion:NotionTools                        | productivity  | tools-productivity | notion_client:notion-client               | api_key=NOTION_API_KEY,database_id=NOTION_DATABASE_ID                                                             |                  |
todoist                | todoist:TodoistTools                      | productivity  | tools-productivity | todoist_api_python:todoist-api-python     | api_token=TODOIST_API_TOKEN                                                                                       |                  |
google_calendar        | google.calendar:GoogleCalendarTools       | productivity  | tools-google       | @google                                   | @google                                                                                                           |                  |
google_drive           | google.drive:GoogleDriveTools             | productivity  | tools-google       | @google                                   | @google                                                                                                           |                  |
google_sheets          | google.sheets:GoogleSheetsTools           | development   | tools-google       | @google                                   | @google                                                                                                           |                  |
clickup                | clickup:ClickUpTools                      | productivity  |                    |                                           | api_key=CLICKUP_API_KEY,master_space_id=MASTER_SPACE_ID                                                           |                  |
mem0                   | mem0:Mem0Tools                            | productivity  |                    | mem0:mem0ai                               | api_key=MEM0_API_KEY?                                                                                             |                  |
zep                    | zep:ZepTools                              | productivity  |                    | zep_cloud:zep-cloud                       | api_key=ZEP_API_KEY                                                                                               |                  |
github                 | github:GithubTools                        | development   | tools-dev          | github:PyGithub                           | access_token=GITHUB_ACCESS_TOKEN                                                                                  |                  |
linear                 | linear:LinearTools                        | development   |                    |                                           | api_key=LINEAR_API_KEY                                                                                            |                  |
jira                   | jira:JiraTools                            | development   | tools-dev          | jira                                      | server_url=JIRA_SERVER_URL,username=JIRA_USERNAME?,password=JIRA_PASSWORD?,token=JIRA_TOKEN?                      |                  |
confluence             | confluence:ConfluenceTools                | development   | tools-dev          | atlassian:atlassian-python-api            | url=CONFLUENCE_URL,username=CONFLUENCE_USERNAME,api_key=CONFLUENCE_API_KEY                                        |                  |
bitbucket              | bitbucket:BitbucketTools                  | development   |                    |                                           | username=BITBUCKET_USERNAME,password=BITBUCKET_PASSWORD?,token=BITBUCKET_TOKEN?                                   |                  |
trello                 | trello:TrelloTools                        | development   |                    | trello:py-trello                          | api_key=TRELLO_API_KEY,api_secret=TRELLO_API_SECRET,token=TRELLO_TOKEN                                            |                  |
zendesk                | zendesk:ZendeskTools                      | development   |                    |                                           | username=ZENDESK_USERNAME,password=ZENDESK_PASSWORD,company_name=ZENDESK_COMPANY_NAME                             |                  |
docker                 | docker:DockerTools                        | development   | tools-dev          | docker                                    |                                                                                                                   |                  | unconfined
aws_lambda             | aws_lambda:AWSLambdaTools                 | development   | tools-dev          | boto3                                     |                                                                                                                   |                  |
apify                  | apify:ApifyTools                          | development   |                    | apify_client:apify-client                 | apify_api_token=APIFY_API_TOKEN                                                                                   |                  |
cal_com                | calcom:CalComTools                        | development   |                    | pytz                                      | api_key=CALCOM_API_KEY                                                                                            |                  |
daytona                | daytona:DaytonaTools                      | development   |                    | daytona                                   | api_key=DAYTONA_API_KEY                                                                                           |                  |
e2b                    | e2b:E2BTools                              | development   |                    | e2b_code_interpreter:e2b-code-interpreter | api_key=E2B_API_KEY                                                                                               |                  |
neo4j                  | neo4j:Neo4jTools                          | development   |                    | neo4j                                     | uri=NEO4J_URI,user=NEO4J_USERNAME,password=NEO4J_PASSWORD                                                         |                  |
openweather            | openweather:OpenWeatherTools              | development   |                    |                                           | api_key=OPENWEATHER_API_KEY                                                                                       |                  |
giphy                  | giphy:GiphyTools                          | development   |                    |                                           | api_key=GIPHY_API_KEY                                                                                             |                  |
google_maps            | google.maps:GoogleMapTools                | development   |                    | googlemaps                                | key=GOOGLE_MAPS_API_KEY                                                                                           |                  |
openai                 | openai:OpenAITools                        | development   |                    |                                           | api_key=OPENAI_API_KEY                                                                                            |                  |
eleven_labs            | eleven_labs:ElevenLabsTools               | development   |                    | elevenlabs                                | api_key=ELEVEN_LABS_API_KEY                                                                                       |                  |
cartesia               | cartesia:CartesiaTools                    | development   |                    | cartesia                                  | api_key=CARTESIA_API_KEY                                                                                          |                  |
lumalabs               | lumalab:LumaLabTools                      | development   |                    | lumaai                                    | api_key=LUMAAI_API_KEY                                                                                            |                  |
modelslabs             | models_labs:ModelsLabTools                | development   |                    |                                           | api_key=MODELS_LAB_API_KEY                                                                                        |                  |
replicate              | replicate:ReplicateTools                  | development   |                    | replicate                                 | api_key=REPLICATE_API_TOKEN                                                                                       |                  |
fal                    | fal:FalTools                              | development   |                    | fal_client:fal-client                     | api_key=FAL_KEY                                                                                                   |                  |
groq                   | models.groq:GroqTools                     | development   |                    | groq                                      | api_key=GROQ_API_KEY                                                                                              |                  |
gemini                 | models.gemini:GeminiTools                 | development   |                    | google.genai:google-genai                 | api_key=GOOGLE_API_KEY                                                                                            |                  |
youtube                | youtube:YouTubeTools                      | entertainment | tools-web          | youtube_transcript_api                    |                                                                                                                   |                  |
spotify                | spotify:SpotifyTools                      | entertainment |                    |                                           | access_token=SPOTIFY_ACCESS_TOKEN                                                                                 |                  |
slack                  | slack:SlackTools                          | communication | tools-comm         | slack_sdk:slack-sdk                       | token=SLACK_TOKEN                                                                                                 |                  |
discord                | discord:DiscordTools                      | communication |                    |                                           | bot_token=DISCORD_BOT_TOKEN                                                                                       |                  |
telegram               | telegram:TelegramTools                    | communication | tools-comm         | telebot:pyTelegramBotAPI                  | token=TELEGRAM_TOKEN,chat_id=TELEGRAM_CHAT_ID                                                                     |                  |
twilio                 | twilio:TwilioTools                        | communication | tools-comm         | twilio                                    | account_sid=TWILIO_ACCOUNT_SID,auth_token=TWILIO_AUTH_TOKEN                                                       |                  |
webex                  | webex:WebexTools                          | communication |                    | webexpythonsdk                            | access_token=WEBEX_ACCESS_TOKEN                                                                                   |                  |
whatsapp               | whatsapp:WhatsAppTools                    | communication |                    |                                           | access_token=WHATSAPP_ACCESS_TOKEN,phone_number_id=WHATSAPP_PHONE_NUMBER_ID                                       |                  |
resend                 | resend:ResendTools                        | email         | tools-comm         | resend                                    | api_key=RESEND_API_KEY                                                                                            |                  |
email                  | email:EmailTools                          | email         |                    |                                           | sender_passkey=EMAIL_SENDER_PASSKEY                                                                               |                  |
gmail                  | google.gmail:GmailTools                   | email         | tools-google       | @google                                   | @google                                                                                                           |                  |
aws_ses                | aws_ses:AWSSESTool                        | email         | tools-dev          | boto3                                     |                                                                                                                   |                  |
shopify                | shopify:ShopifyTools                      | integrations  |                    |                                           | shop_name=SHOPIFY_SHOP_NAME,access_token=SHOPIFY_ACCESS_TOKEN                                                     |                  |
reddit                 | reddit:RedditTools                        | social        | tools-productivity | praw                                      | client_id=REDDIT_CLIENT_ID,client_secret=REDDIT_CLIENT_SECRET,username=REDDIT_USERNAME?,password=REDDIT_PASSWORD? |                  |
x                      | x:XTools                                  | social        | tools-productivity | tweepy                                    | bearer_token=X_BEARER_TOKEN                                                                                       |                  |
zoom                   | zoom:ZoomTools                            | social        |                    |                                           | account_id=ZOOM_ACCOUNT_ID,client_id=ZOOM_CLIENT_ID,client_secret=ZOOM_CLIENT_SECRET                              |                  |
"""
_ROWS = tuple(_row(line) for line in _TABLE.strip().splitlines())

AGNO_TOOLKITS: Mapping[str, AgnoToolkit] = MappingProxyType({row.name: row for row in _ROWS})
"""Every agno toolkit an agent may name, by its catalogue name."""

EXTRAS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        extra: tuple(sorted({p.pip for row in _ROWS if row.extra == extra for p in row.packages}))
        for extra in sorted({row.extra for row in _ROWS if row.extra is not None})
    }
)
"""The pip packages of each of the project's extras, as `pyproject.toml` must list them (a test compares)."""
