# A live system stores the name of one of the operator's credentials (CONCORD_CREDENTIALS), no
# longer the name of an environment variable. Existing values are kept: one that is not a name
# on the operator's list is refused at the next call, with a message naming the setting.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("evaluation", "0020_metricsummary_ci_method"),
    ]

    operations = [
        migrations.RenameField(
            model_name="system",
            old_name="live_api_key_env",
            new_name="live_credential",
        ),
        migrations.AlterField(
            model_name="system",
            name="live_credential",
            field=models.CharField(
                blank=True, max_length=100,
                help_text="the operator's credential sent as a Bearer token (a name in "
                          "CONCORD_CREDENTIALS); empty: none"),
        ),
    ]
