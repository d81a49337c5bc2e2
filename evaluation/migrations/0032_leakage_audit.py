import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("evaluation", "0031_faithful_simulators"),
    ]

    operations = [
        migrations.AddField(
            model_name="simulateddialogue",
            name="leakage",
            field=models.JSONField(blank=True, default=dict, help_text="the leakage audit's flags (lib/simulators/leakage.py); {} until audited"),
        ),
        migrations.AddField(
            model_name="simulation",
            name="sanitised_run",
            field=models.OneToOneField(blank=True, help_text="the same scores without the leaked dialogues (Zhu et al.'s -Both setting; lib/simulators/leakage.py)", null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="sanitised_simulation", to="evaluation.run"),
        ),
    ]
